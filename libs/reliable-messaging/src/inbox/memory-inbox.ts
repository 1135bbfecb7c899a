import { Injectable } from '@nestjs/common';

/**
 * The inbox of tests without a database (`inbox.store: 'memory'`): the idempotency keys this process handled,
 * per dedup scope. It keeps the database inbox's semantics: a key counts as handled only once its handler
 * succeeded (the row commits with the handler's work), and a second delivery of a key whose handler is still
 * running waits for it (as the second insert of a row waits on the first's lock), then is skipped if the first
 * succeeded, or runs if it failed. It forgets nothing while the process lives, unless cleared.
 */
@Injectable()
export class MemoryInbox {
  private readonly handled = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();

  /** Runs `work` unless `key` was handled in `scope`; resolves false, without running it, for a duplicate. */
  async run(scope: string, key: string, work: () => Promise<void>): Promise<boolean> {
    const id = `${scope}\u0000${key}`;
    for (;;) {
      if (this.handled.has(id)) return false;
      const running = this.running.get(id);
      if (!running) break;
      await running.catch(() => undefined);
    }
    const attempt = work();
    this.running.set(id, attempt);
    try {
      await attempt;
      this.handled.add(id);
      return true;
    } finally {
      this.running.delete(id);
    }
  }

  /** Forgets every key: the next delivery of any message is handled again. */
  clear(): void {
    this.handled.clear();
  }
}
