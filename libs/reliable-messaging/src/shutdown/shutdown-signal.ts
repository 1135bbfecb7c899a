import { Injectable } from '@nestjs/common';
import { sharedAbortController } from '../util/shared-abort';

/**
 * That the app has begun shutting down: MessagingLifecycle begins it at shutdown's first step, and what must not
 * hold up the drain waits on it. Ordered consumers start nothing more from then on, and their in-place retries
 * stop waiting: the delivery goes back to the head of its queue instead (ordering/ordered-retry.middleware.ts).
 */
@Injectable()
export class ShutdownSignal {
  private readonly begun = sharedAbortController();

  /** Aborts when shutdown begins. */
  get signal(): AbortSignal {
    return this.begun.signal;
  }

  /** True from the moment shutdown begins. */
  get hasBegun(): boolean {
    return this.begun.signal.aborted;
  }

  /** Called by MessagingLifecycle alone, once shutdown begins; a second call changes nothing. */
  begin(): void {
    this.begun.abort();
  }
}
