import type { EntitySubscriberInterface, QueryRunner, TransactionCommitEvent } from 'typeorm';
import { Progress } from './harness';

/**
 * Counts handled messages and, for messages sent at a pace, their latency from send to commit. One per run.
 */
export class Recorder {
  readonly progress: Progress;
  readonly latenciesMs: number[] = [];
  private readonly sentAt = new Map<string, number>();

  constructor(
    readonly expected: number,
    /** How long it may handle nothing before `settled()` gives up. */
    private readonly stallMs = 60_000,
  ) {
    this.progress = new Progress(expected);
  }

  sent(key: string): void {
    this.sentAt.set(key, performance.now());
  }

  /** Resolves once every message was handled; rejects, saying how many were, when none was for `stallMs`. */
  async settled(): Promise<void> {
    let stalled: NodeJS.Timeout | undefined;
    const stall = new Promise<never>((_, reject) => {
      let last = -1;
      const look = (): void => {
        if (this.progress.count === last) {
          reject(
            new Error(`handled ${this.progress.count} of ${this.expected}, none for ${this.stallMs} ms`),
          );
          return;
        }
        last = this.progress.count;
        stalled = setTimeout(look, this.stallMs);
      };
      look();
    });
    try {
      await Promise.race([this.progress.finished, stall]);
    } finally {
      clearTimeout(stalled);
    }
  }

  handled(key: string): void {
    const sent = this.sentAt.get(key);
    if (sent !== undefined) {
      this.latenciesMs.push(performance.now() - sent);
      this.sentAt.delete(key);
    }
    this.progress.completed();
  }
}

/**
 * Tells when a module handler's transaction committed: the handler notes its query runner, and TypeORM's
 * afterTransactionCommit event (which the module's transactions broadcast) reports the message handled.
 */
export class CommitWatcher implements EntitySubscriberInterface {
  readonly open = new Map<QueryRunner, string>();
  current?: Recorder;

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const key = this.open.get(event.queryRunner);
    if (key === undefined) return;
    this.open.delete(event.queryRunner);
    this.current?.handled(key);
  }
}

/** Sends `total` messages at `rate` per second with `send(n)`; rejects with the first send that failed. */
export async function paced(total: number, rate: number, send: (n: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  const sends: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const wait = started + (n * 1000) / rate - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const sent = send(n);
    // NOTE: the rejection is handled here at once and thrown from Promise.all below; a send left unawaited
    // until then would be an unhandled rejection, which ends the process before the suite cleans up.
    sent.catch(() => undefined);
    sends.push(sent);
  }
  await Promise.all(sends);
}
