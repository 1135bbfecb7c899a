import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';

/**
 * The shape a JSON body from outside may have: one set for every path where outside data arrives (a consumed
 * message, a claim-checked field, a reply, an edited dead letter, an HTTP body). Every limit is checked on the
 * text by a scan that builds no object, before `JSON.parse` runs.
 */
export interface JsonLimits {
  /** Arrays and objects nested in each other at most, the outermost counting 1. Default 32. */
  maxDepth: number;
  /** Elements in one array at most. Default 10 000. */
  maxArrayLength: number;
  /** Keys in one object at most. Default 1 000. */
  maxObjectKeys: number;
  /** Characters (code points) in one key at most. Default 256. */
  maxKeyLength: number;
  /**
   * Characters (code points) in one string value at most. Default 67 108 864 (64 Mi), the claim check's largest
   * body, so by default only the body's own size limit bounds a string; an app whose schema knows better sets less.
   */
  maxStringLength: number;
  /** Keys refused wherever they appear. Default {@link FORBIDDEN_JSON_KEYS}. */
  forbiddenKeys: ReadonlySet<string>;
}

/**
 * `prototype` and every member of `Object.prototype` (`__proto__`, `constructor`, `toString`, `hasOwnProperty`...).
 * A key with one of these names either reaches a prototype or shadows an inherited member, and class-transformer
 * and Nest's ValidationPipe skip or delete such keys without a word, so a whitelist never gets to refuse them.
 */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set([
  'prototype',
  ...Object.getOwnPropertyNames(Object.prototype),
]);

/** The limits used where a caller sets none: the module's `jsonLimits` default, and `parseUntrustedJson()`'s. */
export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxDepth: 32,
  maxArrayLength: 10_000,
  maxObjectKeys: 1_000,
  maxKeyLength: 256,
  maxStringLength: 64 * 1024 * 1024,
  forbiddenKeys: FORBIDDEN_JSON_KEYS,
});

const JSON_LIMIT_OPTION_KEYS = optionKeys<JsonLimits>({
  maxDepth: true,
  maxArrayLength: true,
  maxObjectKeys: true,
  maxKeyLength: true,
  maxStringLength: true,
  forbiddenKeys: true,
});

/**
 * The upper bound of `maxDepth`. NOTE: class-transformer and class-validator recurse once per level; a few
 * thousand levels already overflow Node's default stack, so a deeper limit would trade a refusal for a crash.
 */
const MAX_DEPTH_LIMIT = 1_000;

/**
 * The module's `jsonLimits` with the defaults filled in, checked once at startup: every limit a positive
 * integer, `forbiddenKeys` a Set, no unknown key.
 */
export function resolveJsonLimits(value: unknown, where = 'ReliableMessagingModule'): Readonly<JsonLimits> {
  if (value === undefined) return DEFAULT_JSON_LIMITS;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${where}: 'jsonLimits' must be an object like { maxDepth: 16 }`);
  }
  assertKnownKeys(value, JSON_LIMIT_OPTION_KEYS, where, 'jsonLimits.');
  const limits = { ...DEFAULT_JSON_LIMITS, ...(value as Partial<JsonLimits>) };
  const ranges: Array<[Exclude<keyof JsonLimits, 'forbiddenKeys'>, number]> = [
    ['maxDepth', MAX_DEPTH_LIMIT],
    ['maxArrayLength', 100_000_000],
    ['maxObjectKeys', 100_000_000],
    ['maxKeyLength', 1_000_000],
    ['maxStringLength', 2 ** 30],
  ];
  for (const [name, max] of ranges) {
    const limit = limits[name];
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > max) {
      throw new ConfigurationError(
        `${where}: 'jsonLimits.${name}' must be an integer from 1 to ${max}, got ${String(limit)}`,
      );
    }
  }
  if (!(limits.forbiddenKeys instanceof Set)) {
    throw new ConfigurationError(
      `${where}: 'jsonLimits.forbiddenKeys' must be a Set of key names, e.g. new Set([...FORBIDDEN_JSON_KEYS, 'admin'])`,
    );
  }
  return Object.freeze(limits);
}
