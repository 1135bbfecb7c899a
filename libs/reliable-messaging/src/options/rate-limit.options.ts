import { ConfigurationError } from '../errors/configuration.error';
import { optionKeys } from './known-keys';

/** At most `limit` handler starts per `periodMs`, per consumer and per process. */
export interface RateLimit {
  limit: number;
  periodMs: number;
}

/** Every key of a RateLimit. */
export const RATE_LIMIT_OPTION_KEYS = optionKeys<RateLimit>({ limit: true, periodMs: true });

/** Reads a `rateLimit` (of a consumer or a lane), failing with a ConfigurationError naming `where`. */
export function resolveRateLimit(value: unknown, where: string): RateLimit | undefined {
  if (value === undefined) return undefined;
  const rateLimit = typeof value === 'object' && value !== null ? (value as Partial<RateLimit>) : undefined;
  if (
    rateLimit === undefined ||
    !isInteger(rateLimit.limit, 1, 1_000_000) ||
    !isInteger(rateLimit.periodMs, 1, 86_400_000)
  ) {
    throw new ConfigurationError(
      `${where}: 'rateLimit' must be { limit: 1..1000000, periodMs: 1..86400000 }, e.g. { limit: 10, periodMs: 1000 }`,
    );
  }
  return { limit: rateLimit.limit as number, periodMs: rateLimit.periodMs as number };
}

function isInteger(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}
