import { Injectable, type OnModuleDestroy } from '@nestjs/common';

/**
 * Stops the in-place retry waits of ordered consumers when the app shuts down, so a retry backoff never holds up
 * a graceful shutdown: the delivery goes back to the head of its queue instead (see orderedRetryStage).
 */
@Injectable()
export class OrderedRetry implements OnModuleDestroy {
  private readonly stopping = new AbortController();

  /** Aborts when the app starts shutting down. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Nest's first shutdown hook: waits between attempts end from here. */
  onModuleDestroy(): void {
    this.stopping.abort();
  }
}
