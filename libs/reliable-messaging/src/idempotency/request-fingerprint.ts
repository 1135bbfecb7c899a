import { createHash } from 'node:crypto';

/** What identifies a request for its idempotency key: a retry must match it exactly. */
export interface RequestFingerprintInput {
  method: string;
  /** The path and query, as sent. */
  path: string;
  /** The parsed body; undefined for a request without one. */
  body: unknown;
}

/**
 * SHA-256, hex, of the method, the path and the body written as canonical JSON (object keys sorted, no
 * whitespace). The parsed body rather than the raw bytes: the interceptor sees only what the body parser made of
 * them, and a retry that formats or orders its JSON differently is the same request, so it must not get a 422.
 */
export function requestFingerprint({ method, path, body }: RequestFingerprintInput): string {
  return createHash('sha256')
    .update(JSON.stringify([method.toUpperCase(), path, canonicalJson(body)]))
    .digest('hex');
}

/** `value` as JSON with every object's keys in sorted order, so two equal bodies give one string. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}
