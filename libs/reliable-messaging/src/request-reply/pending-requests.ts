import { RequestInterruptedError } from '../errors/request-interrupted.error';
import { RequestTimeoutError } from '../errors/request-timeout.error';
import type { ReplyOutcome } from './reply-message';

/** A request as the caller waits for it. */
export interface RequestDescription {
  messageId: string;
  messageType: string;
  exchange: string;
  routingKey: string;
  timeoutMs: number;
}

interface Pending {
  request: RequestDescription;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timer: NodeJS.Timeout;
  detach?: () => void;
}

/**
 * The requests waiting for their replies, by message id (their replies' correlation id), each with one timer:
 * a request ends exactly once, by its reply, its timeout, a failure to send it, an abort, or the loss of the
 * channel its reply would come back on, and whatever ends it clears its timer.
 */
export class PendingRequests {
  private readonly byId = new Map<string, Pending>();

  /** Requests still waiting. */
  get size(): number {
    return this.byId.size;
  }

  /**
   * Waits for the reply to `request`: resolves with its value, rejects with the remote handler's error, with
   * RequestTimeoutError after `remainingMs` (default its whole `timeoutMs`), or with the signal's reason when
   * it aborts.
   */
  wait(request: RequestDescription, signal?: AbortSignal, remainingMs = request.timeoutMs): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(
        () =>
          this.fail(
            request.messageId,
            new RequestTimeoutError(
              request.messageType,
              request.messageId,
              request.exchange,
              request.routingKey,
              request.timeoutMs,
            ),
          ),
        Math.max(0, remainingMs),
      );
      const pending: Pending = { request, resolve, reject, timer };
      if (signal) {
        const onAbort = (): void => {
          this.fail(request.messageId, signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        pending.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.byId.set(request.messageId, pending);
    });
  }

  /**
   * Ends the request a reply correlates with, with what `read` makes of the reply (a `read` that throws fails
   * the request with its error); false when none waits for it (it timed out, or is not ours).
   */
  settle(correlationId: string, read: (request: RequestDescription) => ReplyOutcome): boolean {
    const pending = this.take(correlationId);
    if (!pending) return false;
    let outcome: ReplyOutcome;
    try {
      outcome = read(pending.request);
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (outcome.ok) pending.resolve(outcome.value);
    else pending.reject(outcome.error);
    return true;
  }

  /** Fails one request (it could not be sent, it timed out, its caller gave up); false when it had ended. */
  fail(messageId: string, error: unknown): boolean {
    const pending = this.take(messageId);
    if (!pending) return false;
    pending.reject(error);
    return true;
  }

  /** Fails every waiting request at once with RequestInterruptedError: their replies can no longer arrive. */
  interruptAll(reason: string): number {
    const all = [...this.byId.values()];
    for (const pending of all) {
      this.take(pending.request.messageId);
      pending.reject(
        new RequestInterruptedError(pending.request.messageType, pending.request.messageId, reason),
      );
    }
    return all.length;
  }

  private take(messageId: string): Pending | undefined {
    const pending = this.byId.get(messageId);
    if (!pending) return undefined;
    this.byId.delete(messageId);
    clearTimeout(pending.timer);
    pending.detach?.();
    return pending;
  }
}
