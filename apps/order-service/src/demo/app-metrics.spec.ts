import { describe, expect, it } from '@jest/globals';
import { metricTotal } from './app-metrics';

const PAGE = [
  '# HELP rm_messages_retried_total Failed messages scheduled for another attempt.',
  '# TYPE rm_messages_retried_total counter',
  'rm_messages_retried_total{queue="d.receipt.order-paid",type="order.paid"} 7',
  'rm_messages_retried_total{queue="d.receipt.order-paid",type="other"} 2',
  'rm_messages_retried_total{queue="d.payment.order-placed",type="order.placed"} 1',
  'rm_messages_retried_total_extra 100',
  'process_cpu_seconds_total 1.5',
].join('\n');

describe('metricTotal', () => {
  it('sums the samples whose labels match', () => {
    expect(metricTotal(PAGE, 'rm_messages_retried_total', { queue: 'd.receipt.order-paid' })).toBe(9);
    expect(metricTotal(PAGE, 'rm_messages_retried_total')).toBe(10);
    expect(metricTotal(PAGE, 'process_cpu_seconds_total')).toBe(1.5);
  });

  it('reads 0 for a metric or label set without samples', () => {
    expect(metricTotal(PAGE, 'rm_messages_deduplicated_total')).toBe(0);
    expect(metricTotal(PAGE, 'rm_messages_retried_total', { queue: 'd.shipping.order-paid' })).toBe(0);
  });
});
