import type { DeadLetter } from 'nestjs-reliable-messaging/operations';

/**
 * The warning the tools show for a dead letter whose `rm-dead-letter-queue` header names another queue than the
 * one it sits in: forged, or copied between queues by hand. Undefined when the header agrees (or is absent).
 */
export function claimedQueueWarning(
  deadLetter: Pick<DeadLetter, 'queue' | 'claimedQueue'>,
): string | undefined {
  if (deadLetter.claimedQueue === undefined) return undefined;
  return (
    `its rm-dead-letter-queue header claims queue '${deadLetter.claimedQueue}', but it sits in the dead-letter ` +
    `queue of '${deadLetter.queue}': the header was not written by this module there; a replay goes to ` +
    `'${deadLetter.queue}' only`
  );
}
