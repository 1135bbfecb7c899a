import type { Abandonable } from '../util/until-aborted';

/**
 * How one attempt is abandoned: its deadline passed, or shutdown passed its own. The handler's `ctx.signal` aborts,
 * and the stages waiting on the attempt (the inbox, which ends its transaction) are told through `onAbort()`.
 *
 * NOTE: the AbortController behind the signal is made only when a handler asks for its signal, which most never
 * do. One per delivery, with the inbox stage listening on its signal, cost about 10 µs of CPU per message in the
 * transactional benchmark's profile (the controller, its event target and the listener).
 */
export class AttemptAbort implements Abandonable {
  private controller?: AbortController;
  private abandoned?: { reason: unknown };
  private listeners?: Array<() => void>;

  /** The handler's signal, made on first use; aborted already when the attempt was abandoned before. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abandoned) this.controller.abort(this.abandoned.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abandoned !== undefined;
  }

  /** Why the attempt was abandoned; undefined while it was not. */
  get reason(): unknown {
    return this.abandoned?.reason;
  }

  /** Abandons the attempt, once: aborts the signal, then calls the listeners. */
  abort(reason: unknown): void {
    if (this.abandoned) return;
    this.abandoned = { reason };
    this.controller?.abort(reason);
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /** Calls `listener` once when the attempt is abandoned; returns a function that removes it. */
  onAbort(listener: () => void): () => void {
    (this.listeners ??= []).push(listener);
    return () => {
      const index = this.listeners?.indexOf(listener) ?? -1;
      if (index >= 0) this.listeners?.splice(index, 1);
    };
  }
}
