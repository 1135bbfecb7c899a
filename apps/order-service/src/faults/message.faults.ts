import { plantPoisonOrder } from '../demo/poison-order';
import { waitUntil, type Fault } from './fault';

/** Receipt calls held past the deadline in one cycle. */
const HUNG_CALLS = 5;

/**
 * The receipt service hangs a few calls three times longer than the consumer's deadline: it sends the receipt at
 * once and answers late, as a slow service does. Each handler's signal aborts at its deadline and the attempt is
 * retried; the retry must find the receipt already sent under its idempotency key.
 */
export function handlerDeadlineFault(): Fault {
  return {
    name: 'handler-deadline',
    description: `${HUNG_CALLS} receipt calls hung 3 times past the handler deadline`,
    machineWide: false,
    async inject(context) {
      const hangMs = context.handlerDeadlineMs * 3;
      try {
        context.receipts.hangNext(HUNG_CALLS, hangMs);
        await waitUntil(
          `${HUNG_CALLS} receipt calls to hang`,
          async () => context.receipts.hangsLeft === 0,
          60_000,
          context.signal,
        );
        await waitUntil(
          'the hung receipt calls to be answered',
          async () => context.receipts.hanging === 0,
          hangMs + 30_000,
          context.signal,
        );
        context.note(
          `${HUNG_CALLS} calls hung ${hangMs / 1000} s against a ${context.handlerDeadlineMs / 1000} s deadline`,
        );
      } finally {
        context.receipts.hangNext(0, 0);
      }
    },
  };
}

/**
 * A poison message among healthy ones: an OrderPlaced naming an order that does not exist, which the order saga fails
 * on every attempt. It must be the cycle's only dead letter, as `attempts-exhausted`.
 */
export function poisonMessageFault(): Fault {
  return {
    name: 'poison',
    description: 'a poison OrderPlaced among healthy ones: exactly one dead letter, attempts-exhausted',
    machineWide: false,
    async inject(context) {
      const { names } = context.environment;
      const channel = await context.broker.confirmChannel();
      try {
        const poison = await plantPoisonOrder(context.database, channel, names.exchange, 'fault-poison');
        context.expectDeadLetter({
          messageId: poison.messageId,
          queue: `${names.queues.sagaPlaced}.dlq`,
          reason: 'attempts-exhausted',
          description: `an OrderPlaced for the unknown order ${poison.wrongId}`,
        });
      } finally {
        await channel.close().catch(() => undefined);
      }
    },
  };
}
