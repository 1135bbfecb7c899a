import type { ChannelModel, GetMessage } from 'amqplib';
import { type DeadLetter, readDeadLetter } from 'nestjs-reliable-messaging/operations';
import { matchesFilter, type DeadLetterFilter } from './dead-letter-filter';
import { DeadLetterReader } from './dead-letter-reader';
import { headerBytes } from './dead-letter-summary';

/** Called for each matching dead letter while its reader holds it; resolving false ends the scan. */
export type DeadLetterVisit = (
  reader: DeadLetterReader,
  message: GetMessage,
  deadLetter: DeadLetter,
) => Promise<boolean>;

/** How far a scan got. */
export interface DeadLetterScanResult {
  /** Messages read. */
  scanned: number;
  /** The scan stopped with messages left unread. */
  more: boolean;
  /** Bytes read: every body `basic.get` delivered, and roughly its headers. */
  readBytes: number;
  /** The scan stopped because the bytes read reached `maxReadBytes`. */
  stoppedAtReadBudget: boolean;
}

/**
 * Reads the dead-letter queues in turn, calling `visit` for each message matching the filter, up to `limit`
 * matches. Every queue is opened first, so the progress total is known; each reader is closed (returning the
 * messages it still holds) when its queue is done or the scan ends. A dead letter that came back during the scan
 * (a replayed message that failed again: the same message id, dead-lettered more often) is left for the next
 * scan, so one replay never replays a message twice; copies with the same count are each visited.
 *
 * A scan also stops once the bytes it has read (bodies included: `basic.get` delivers them whole, matching or
 * not) reach `maxReadBytes`, so a request's reading is bounded by bytes as well as by count.
 */
export async function scanDeadLetters(
  model: ChannelModel,
  deadLetterQueues: readonly string[],
  filter: DeadLetterFilter,
  limit: number,
  onProgress: ((scanned: number, total: number) => void) | undefined,
  visit: DeadLetterVisit,
  maxReadBytes = Infinity,
): Promise<DeadLetterScanResult> {
  const readers: DeadLetterReader[] = [];
  try {
    for (const queue of deadLetterQueues) readers.push(await DeadLetterReader.open(model, queue));
    const total = readers.reduce((sum, reader) => sum + reader.depth, 0);
    let scanned = 0;
    let matched = 0;
    let readBytes = 0;
    const stop = (stoppedAtReadBudget = false) => ({
      scanned,
      more: scanned < total,
      readBytes,
      stoppedAtReadBudget,
    });
    const visitedCounts = new Map<string, number>();
    onProgress?.(0, total);
    for (const reader of readers) {
      for (;;) {
        if (matched >= limit) return stop();
        if (readBytes >= maxReadBytes) return stop(true);
        const message = await reader.next();
        if (!message) break;
        scanned++;
        readBytes += message.content.length + headerBytes(message.properties.headers);
        onProgress?.(scanned, total);
        const deadLetter = readDeadLetter(message, reader.queue);
        if (!matchesFilter(deadLetter, filter)) continue;
        if (deadLetter.messageId !== undefined) {
          const visited = visitedCounts.get(deadLetter.messageId);
          if (visited !== undefined && deadLetter.deadLetterCount > visited) continue;
          visitedCounts.set(deadLetter.messageId, deadLetter.deadLetterCount);
        }
        matched++;
        if (!(await visit(reader, message, deadLetter))) return stop();
      }
      await reader.close();
    }
    return { scanned, more: false, readBytes, stoppedAtReadBudget: false };
  } finally {
    for (const reader of readers) await reader.close();
  }
}
