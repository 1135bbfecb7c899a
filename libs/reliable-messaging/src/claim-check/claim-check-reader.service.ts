import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { HEADERS } from '../reliable-messaging.constants';
import { CLAIM_CHECK_FIELD } from '../decorators/message-type.decorator';
import { parseJsonBody } from '../envelope/safe-json';
import { InvalidMessageError } from '../errors/invalid-message.error';

/** A claim check's body as its store holds it, once checked against the message's headers. */
export interface StoredClaimCheck {
  /** Where the body is, in the store's own terms (`ClaimCheckStore.locate`). */
  location: string;
  body: Buffer;
  /** The property the body is the value of; undefined for a whole-body claim check. */
  field?: string;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** How much of a refused reference a dead-letter reason quotes. */
const QUOTED_REFERENCE_CHARS = 120;

/**
 * The consuming half of the claim check: turns a delivery that carries a reference back into the body its
 * publisher sent, before it is decoded. The reference must be one the configured store would write (its scheme,
 * bucket or directory, a well-formed name), the body must be there, of the size and SHA-256 the headers give, and
 * within `claimCheck.maxBodyBytes`; each refusal is an InvalidMessageError (dead-lettered, never retried). An
 * unreachable store throws ClaimCheckStoreUnavailableError, which the claim-check stage waits out.
 */
@Injectable()
export class ClaimCheckReader {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /** Whether a delivery carries a claim-check reference. */
  static carriesReference(raw: ConsumeMessage): boolean {
    return raw.properties.headers?.[HEADERS.claimCheck] !== undefined;
  }

  /**
   * The body a message's claim-check headers point to, exactly as stored (the whole body, or the JSON of the
   * field `field` names), checked as `resolve()` checks it; the reference's location in the store with it.
   */
  async stored(headers: Record<string, unknown>): Promise<StoredClaimCheck> {
    const { store, maxBodyBytes } = this.options.claimCheck;
    const reference = text(headers[HEADERS.claimCheck]);
    if (reference === undefined || reference === '') {
      throw new InvalidMessageError('invalid-header', `${HEADERS.claimCheck} must be a non-empty string`);
    }
    if (!store) {
      throw new InvalidMessageError(
        'claim-check-unsupported',
        'the message carries a claim-check reference, but this app has no claim-check store (give the module a dataSource or claimCheck.store)',
      );
    }
    const location = store.locate(reference);
    if (location === undefined) {
      throw new InvalidMessageError(
        'claim-check-forged',
        `reference '${quote(reference)}' does not point into this app's ${store.kind} claim-check store`,
      );
    }
    // Only a number or text: Number() of a table whose `valueOf` and `toString` are strings throws a TypeError.
    const rawBytes = headers[HEADERS.claimCheckBytes];
    const bytes = typeof rawBytes === 'number' ? rawBytes : Number(text(rawBytes));
    const sha256 = text(headers[HEADERS.claimCheckSha256]);
    if (!Number.isSafeInteger(bytes) || bytes < 0 || sha256 === undefined || !SHA256_HEX.test(sha256)) {
      throw new InvalidMessageError(
        'invalid-header',
        `a claim check needs ${HEADERS.claimCheckBytes} (bytes) and ${HEADERS.claimCheckSha256} (lower-case hex)`,
      );
    }
    if (bytes > maxBodyBytes) {
      throw new InvalidMessageError(
        'claim-check-too-large',
        `the claim check holds ${bytes} bytes, above the limit of ${maxBodyBytes} (claimCheck.maxBodyBytes)`,
      );
    }
    const field = text(headers[HEADERS.claimCheckField]);
    if (field !== undefined && !CLAIM_CHECK_FIELD.test(field)) {
      throw new InvalidMessageError('invalid-header', `${HEADERS.claimCheckField} must name a property`);
    }
    // The declared size goes to the store, which refuses a body of another size before reading it; the size and
    // SHA-256 are still checked here, for a store of the app's own that ignores it.
    const body = await store.get(location, bytes);
    if (body === undefined) {
      throw new InvalidMessageError(
        'claim-check-missing',
        `the body of ${store.kind} claim check '${quote(reference)}' is not in the store (expired, purged or never written)`,
      );
    }
    if (body.length !== bytes || createHash('sha256').update(body).digest('hex') !== sha256) {
      throw new InvalidMessageError(
        'claim-check-corrupt',
        `the body of claim check '${quote(reference)}' is ${body.length} bytes and does not match the ${HEADERS.claimCheckSha256} the message carries`,
      );
    }
    return { location, body, field };
  }

  /** The full body of a delivery carrying a reference. */
  async resolve(raw: ConsumeMessage): Promise<Buffer> {
    const { body, field } = await this.stored(raw.properties.headers ?? {});
    if (field === undefined) return body;
    const { jsonLimits } = this.options;
    const wire = parseJsonBody(raw.content, jsonLimits);
    if (typeof wire !== 'object' || wire === null || Array.isArray(wire)) {
      throw new InvalidMessageError(
        'malformed-json',
        'a message with a claim-checked field must be a JSON object',
      );
    }
    (wire as Record<string, unknown>)[field] = parseJsonBody(body, jsonLimits);
    return Buffer.from(JSON.stringify(wire), 'utf8');
  }
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

function quote(reference: string): string {
  const printable = reference.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > QUOTED_REFERENCE_CHARS
    ? `${printable.slice(0, QUOTED_REFERENCE_CHARS)}…`
    : printable;
}
