import { ConfigurationError } from '../errors/configuration.error';
import type { ResolvedRetryOptions } from '../options/retry.options';
import { anyMessageTypeUsesClaimCheck } from '../decorators/message-type.decorator';
import type { ResolvedClaimCheckOptions } from '../options/claim-check.options';

/**
 * Fails startup when a consumer's own retry schedule (`@Consume({ retry })` over the module's `retry`) could
 * outlast the bodies its messages refer to: the module's options are checked when they are resolved, a
 * consumer's only once it is planned. Nothing to check without a claim-check store, or in an app that does not
 * use the claim check itself (neither its options nor a message class turn it on).
 */
export function assertBodiesOutliveRetries(
  claimCheck: Pick<ResolvedClaimCheckOptions, 'store' | 'timeToLiveMs' | 'configured'>,
  retry: Pick<ResolvedRetryOptions, 'maxAttempts' | 'maxDelayMs'>,
  where: string,
): void {
  if (!claimCheck.store || !(claimCheck.configured || anyMessageTypeUsesClaimCheck())) return;
  const retrying = retry.maxAttempts * retry.maxDelayMs;
  if (claimCheck.timeToLiveMs < retrying) {
    throw new ConfigurationError(
      `${where}: its retry schedule (retry.maxAttempts × retry.maxDelayMs = ${retrying} ms) outlasts ` +
        `claimCheck.timeToLiveMs (${claimCheck.timeToLiveMs} ms): a retried claim-checked message would lose its ` +
        'body. Raise claimCheck.timeToLiveMs or shorten the retries',
    );
  }
}
