import { describe, expect, it } from '@jest/globals';
import { TopologyMismatchError } from '../errors/topology-mismatch.error';
import { toTopologyError } from './declaration-channel';

/** An error as amqplib 2.x raises it for a channel the broker closed, with the broker's own text. */
function brokerError(text: string): Error {
  return new Error(`Operation failed: QueueDeclare; 406 (PRECONDITION-FAILED) with message "${text}"`);
}

// The broker's texts as RabbitMQ 3.10 sends them, captured with a raw client; test/topology-mismatch.e2e-spec.ts
// provokes the delivery-limit and exchange-type mismatches on the real broker.
const CASES: Array<[string, string, Partial<TopologyMismatchError>]> = [
  [
    'a queue of the other type',
    "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'orders' in vhost '/': received 'quorum' but current is 'classic'",
    { kind: 'queue', entity: 'orders', argument: 'x-queue-type', declared: 'quorum', existing: 'classic' },
  ],
  [
    'a typed value against a missing one',
    "PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' for queue 'orders' in vhost '/': received the value 'events.dead-letter' of type 'longstr' but current is none",
    { argument: 'x-dead-letter-exchange', declared: 'events.dead-letter', existing: 'none' },
  ],
  [
    'a missing value against a typed one',
    "PRECONDITION_FAILED - inequivalent arg 'x-delivery-limit' for queue 'orders' in vhost '/': received none but current is the value '20' of type 'byte'",
    { argument: 'x-delivery-limit', declared: 'none', existing: '20' },
  ],
  [
    'two numbers',
    "PRECONDITION_FAILED - inequivalent arg 'x-delivery-limit' for queue 'payment.order-placed' in vhost 'shop': received '5' but current is '20'",
    { entity: 'payment.order-placed', argument: 'x-delivery-limit', declared: '5', existing: '20' },
  ],
  [
    'an exchange of another type',
    "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'events' in vhost '/': received 'topic' but current is 'direct'",
    { kind: 'exchange', entity: 'events', argument: 'type', declared: 'topic', existing: 'direct' },
  ],
];

describe('toTopologyError', () => {
  it.each(CASES)('turns the broker text for %s into a TopologyMismatchError', (_what, text, expected) => {
    const error = toTopologyError(brokerError(text));

    expect(error).toBeInstanceOf(TopologyMismatchError);
    expect(error).toMatchObject(expected);
  });

  it('says what differs and how to fix it', () => {
    const error = toTopologyError(brokerError(CASES[0][1])) as TopologyMismatchError;

    expect(error.message).toBe(
      "queue 'orders' already exists with x-queue-type=classic, but this app declares x-queue-type=quorum. " +
        "RabbitMQ cannot change x-queue-type in place: either change the consumer's options back to match, " +
        'or drain the queue, delete it (rabbitmqctl delete_queue orders) and restart so it is declared anew.',
    );
  });

  it.each([
    ['another PRECONDITION_FAILED', new Error('PRECONDITION_FAILED - unknown delivery tag 7')],
    [
      'an access refusal',
      new Error("ACCESS_REFUSED - access to queue 'orders' in vhost '/' refused for user 'app'"),
    ],
    ['a value that is not an Error', 'socket closed'],
  ])('passes %s through unchanged', (_what, error) => {
    expect(toTopologyError(error)).toBe(error);
  });
});
