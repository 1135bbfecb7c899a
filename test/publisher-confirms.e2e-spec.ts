import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Message } from 'amqplib';
import { IsString } from 'class-validator';
import {
  MessageType,
  PayloadTooLargeError,
  PublishError,
  PublishRejectedError,
  UnroutableMessageError,
} from 'nestjs-reliable-messaging';
import { MessagingTestApp } from './support/messaging-app';
import { TestBroker } from './support/test-broker';

@MessageType({ type: 'invoice.issued', idempotencyKey: (m: InvoiceIssued) => m.invoiceId })
class InvoiceIssued {
  @IsString() invoiceId!: string;
  @IsString() note = '';
}

const MAX_PAYLOAD_BYTES = 64 * 1024;
const run = promisify(execFile);

/** The channel numbers the broker lists on the app's publisher connection. */
async function publisherChannels(connectionName: string): Promise<number[]> {
  const { stdout: connections } = await run('rabbitmqctl', [
    '-q',
    'list_connections',
    'pid',
    'client_properties',
    '--no-table-headers',
  ]);
  const pid = connections
    .split('\n')
    .find((line) => line.includes(`{"connection_name","${connectionName}:publish"}`))
    ?.split('\t')[0];
  if (!pid) throw new Error(`no publisher connection named ${connectionName}:publish`);
  const { stdout: channels } = await run('rabbitmqctl', [
    '-q',
    'list_channels',
    'connection',
    'number',
    '--no-table-headers',
  ]);
  return channels
    .split('\n')
    .map((line) => line.split('\t'))
    .filter(([connection]) => connection === pid)
    .map(([, number]) => Number(number));
}

function invoice(invoiceId: string, note = ''): InvoiceIssued {
  return Object.assign(new InvoiceIssued(), { invoiceId, note });
}

/** The invoice id in a published message's JSON body. */
function invoiceIdOf(message: Message): string {
  return (JSON.parse(message.content.toString()) as InvoiceIssued).invoiceId;
}

describe('publishing with confirms against the real broker', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let exchange: string;
  let invoices: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { options: { maxPayloadBytes: MAX_PAYLOAD_BYTES } });
    exchange = `${broker.prefix}.events`;
    invoices = broker.name('invoices');
    const channel = await broker.openChannel();
    await channel.assertQueue(invoices, { durable: true });
    await channel.bindQueue(invoices, exchange, 'invoice.issued');
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('resolves once the broker has stored the message, persistent and with its envelope', async () => {
    const receipt = await app.publisher.publishNow(invoice('inv-1'));

    const [message] = await broker.getAll(invoices);
    expect(message.properties).toMatchObject({
      messageId: receipt.messageId,
      deliveryMode: 2,
      type: 'invoice.issued',
    });
    expect(JSON.parse(message.content.toString())).toEqual({ invoiceId: 'inv-1', note: '' });
  });

  it('rejects an unroutable message with UnroutableMessageError instead of dropping it silently', async () => {
    const publishing = app.publisher.publishNow(invoice('inv-2'), { routingKey: 'invoice.nobody-listens' });

    await expect(publishing).rejects.toBeInstanceOf(UnroutableMessageError);
    await expect(publishing).rejects.toMatchObject({
      exchange,
      routingKey: 'invoice.nobody-listens',
      replyText: '312 NO_ROUTE',
    });
  });

  it('refuses a body over maxPayloadBytes with PayloadTooLargeError and sends nothing', async () => {
    const publishing = app.publisher.publishNow(invoice('inv-3', 'x'.repeat(MAX_PAYLOAD_BYTES)));

    await expect(publishing).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(publishing).rejects.toThrow(
      /is 655\d\d bytes, above the limit of 65536 \(maxPayloadBytes\)/,
    );
    await app.publisher.publishNow(invoice('inv-3-small'));
    expect((await broker.getAll(invoices)).map(invoiceIdOf)).toEqual(['inv-3-small']);
  });

  it('publishAll() without a dataSource sends a batch in its order, each confirmed; one too large sends none', async () => {
    await expect(
      app.publisher.publishAll([
        invoice('batch-refused-1'),
        invoice('batch-refused-2', 'x'.repeat(MAX_PAYLOAD_BYTES)),
      ]),
    ).rejects.toBeInstanceOf(PayloadTooLargeError);

    const receipts = await app.publisher.publishAll([
      invoice('batch-1'),
      invoice('batch-2'),
      invoice('batch-3'),
    ]);

    const messages = await broker.getAll(invoices);
    expect(messages.map(invoiceIdOf)).toEqual(['batch-1', 'batch-2', 'batch-3']);
    expect(messages.map((m) => m.properties.messageId as string)).toEqual(
      receipts.map((receipt) => receipt.messageId),
    );
  });

  it('rejects with PublishRejectedError when the broker nacks (a full queue that rejects publishes)', async () => {
    const full = broker.name('full');
    const channel = await broker.openChannel();
    await channel.assertQueue(full, {
      durable: true,
      arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(full, exchange, 'invoice.bounded');

    await app.publisher.publishNow(invoice('inv-4a'), { routingKey: 'invoice.bounded' });
    const second = app.publisher.publishNow(invoice('inv-4b'), { routingKey: 'invoice.bounded' });

    await expect(second).rejects.toBeInstanceOf(PublishRejectedError);
    expect(await broker.queueDepth(full)).toBe(1);
  });

  it('opens a new publisher channel after a long run of refusals, and publishing goes on', async () => {
    const refusing = broker.name('always-full');
    const channel = await broker.openChannel();
    await channel.assertQueue(refusing, {
      durable: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(refusing, exchange, 'invoice.refused');
    // A confirm ends any run of refusals an earlier test left.
    await app.publisher.publishNow(invoice('before-refusals'));
    const [before] = await publisherChannels(app.connectionName);

    const started = Date.now();
    let refused = 0;
    while (app.logger.find('warn', /opening a new publisher channel/).length === 0) {
      if (Date.now() - started > 30_000) throw new Error(`no new channel after ${refused} refusals`);
      await expect(
        app.publisher.publishNow(invoice(`refused-${refused}`), { routingKey: 'invoice.refused' }),
      ).rejects.toBeInstanceOf(PublishRejectedError);
      refused++;
    }

    expect(refused).toBeGreaterThanOrEqual(20);
    await app.publisher.publishNow(invoice('after-new-channel'));
    const after = await publisherChannels(app.connectionName);
    expect(after).toHaveLength(1);
    expect(after[0]).toBeGreaterThan(before);
    expect((await broker.getAll(invoices)).map(invoiceIdOf)).toContain('after-new-channel');
  });

  it('fails a publish to a missing exchange with a PublishError, and the next publish works', async () => {
    const publishing = app.publisher.publishNow(invoice('inv-5'), {
      exchange: broker.name('no-such-exchange'),
    });

    await expect(publishing).rejects.toBeInstanceOf(PublishError);
    await expect(publishing).rejects.toThrow(/NOT_FOUND - no exchange/);
    await app.publisher.publishNow(invoice('inv-5-next'));
    expect((await broker.getAll(invoices)).map(invoiceIdOf)).toEqual(['inv-5-next']);
  });

  it('confirms a burst of 400 concurrent 60 KiB publishes exactly once each', async () => {
    const note = 'y'.repeat(60 * 1024);
    const ids = Array.from({ length: 400 }, (_, n) => `burst-${n}`);

    const receipts = await Promise.all(ids.map((id) => app.publisher.publishNow(invoice(id, note))));

    expect(new Set(receipts.map((receipt) => receipt.messageId)).size).toBe(ids.length);
    const stored = (await broker.getAll(invoices)).map(invoiceIdOf);
    expect(stored.sort()).toEqual([...ids].sort());
  });
});
