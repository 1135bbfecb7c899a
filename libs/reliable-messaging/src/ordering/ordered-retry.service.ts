import { Injectable } from '@nestjs/common';
import { sharedAbortController } from '../util/shared-abort';

/**
 * Stops the in-place retry waits of ordered consumers when shutdown begins (MessagingLifecycle calls
 * `stopWaiting`), so a retry backoff never holds up a graceful shutdown: the delivery goes back to the head of its
 * queue instead (see orderedRetryStage).
 */
@Injectable()
export class OrderedRetry {
  private readonly stopping = sharedAbortController();

  /** Aborts when the app starts shutting down. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Ends every wait between in-place attempts, now and from now on. */
  stopWaiting(): void {
    this.stopping.abort();
  }
}
