import type { Type } from '@nestjs/common';
import { MESSAGE_TYPE_METADATA } from '../reliable-messaging.constants';
import type { MessageClaimCheck } from '../options/claim-check.options';
import { assertLaneName } from '../options/lane.options';

/** How a message class is named on the wire and how its business keys are derived. */
export interface MessageTypeOptions<T = unknown> {
  /** The message type, also the routing key on the events exchange, e.g. `order.placed`. */
  type: string;
  /** Schema version `major.minor`. Add optional fields in a new minor; a new major is a breaking change. Default: `1.0`. */
  version?: string;
  /** The business key consumers deduplicate on. Required here or per publish call. */
  idempotencyKey?: (message: T) => string;
  /** Messages with the same ordering key are relayed and, with ordered consumers, handled in order. Default: none. */
  orderingKey?: (message: T) => string;
  /**
   * Sends large bodies, or one large property, through the module's claim-check store: the message carries a
   * reference, its size and SHA-256, and consumers get the full payload back (docs/claim-check.md). Default: none.
   */
  claimCheck?: MessageClaimCheck;
  /**
   * The lane its messages go to unless the publish call names one, e.g. `'bulk'` for a nightly export's
   * messages (docs/lanes.md). Default: none (each consumer's default lane).
   */
  lane?: string;
}

/** A message definition with its version parsed. */
export interface MessageDefinition<T = unknown> extends Required<
  Pick<MessageTypeOptions<T>, 'type' | 'version'>
> {
  target: Type<T>;
  major: number;
  idempotencyKey?: (message: T) => string;
  orderingKey?: (message: T) => string;
  claimCheck?: MessageClaimCheck;
  lane?: string;
}

/** A property name a claim check may store apart: an identifier, never one that reaches a prototype. */
export const CLAIM_CHECK_FIELD = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z_$][\w$]{0,127}$/;

const VERSION_PATTERN = /^(\d{1,4})\.(\d{1,4})$/;

/** Parses `major.minor`; returns undefined for anything else. */
export function parseSchemaVersion(version: string): { major: number; minor: number } | undefined {
  const match = VERSION_PATTERN.exec(version);
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

/** The message types whose class turns the claim check on (`@MessageType({ claimCheck })`), as classes load. */
const claimCheckedTypes = new Set<string>();

/** Whether any message class loaded so far turns the claim check on. */
export function anyMessageTypeUsesClaimCheck(): boolean {
  return claimCheckedTypes.size > 0;
}

/**
 * Marks a class as a message: its type name, schema version and business keys. Properties are validated with
 * class-validator on consume; unknown properties from newer producers are stripped, not rejected.
 *
 * @example
 * ＠MessageType({ type: 'order.placed', version: '1.0', idempotencyKey: (m) => `order-placed:${m.orderId}` })
 * export class OrderPlaced { ＠IsUUID() orderId!: string; }
 */
export function MessageType<T>(options: MessageTypeOptions<T>): ClassDecorator {
  const version = options.version ?? '1.0';
  const parsed = parseSchemaVersion(version);
  if (!parsed) {
    throw new Error(`@MessageType('${options.type}'): version must look like '1.0', got '${version}'`);
  }
  const { claimCheck } = options;
  if (claimCheck !== undefined) {
    const { thresholdBytes, field } = claimCheck;
    if (!Number.isInteger(thresholdBytes) || thresholdBytes < 0) {
      throw new Error(
        `@MessageType('${options.type}'): claimCheck.thresholdBytes must be a whole number of bytes, 0 or more`,
      );
    }
    if (field !== undefined && !CLAIM_CHECK_FIELD.test(field)) {
      throw new Error(
        `@MessageType('${options.type}'): claimCheck.field must name a property, got '${field}'`,
      );
    }
  }
  if (options.lane !== undefined) assertLaneName(options.lane, `@MessageType('${options.type}')`);
  return (target) => {
    const definition: MessageDefinition<T> = {
      target: target as unknown as Type<T>,
      type: options.type,
      version,
      major: parsed.major,
      idempotencyKey: options.idempotencyKey,
      orderingKey: options.orderingKey,
      claimCheck: claimCheck ? { ...claimCheck } : undefined,
      lane: options.lane,
    };
    Reflect.defineMetadata(MESSAGE_TYPE_METADATA, definition, target);
    if (claimCheck !== undefined) claimCheckedTypes.add(options.type);
  };
}

/** The definition `@MessageType()` put on a class, if any. */
export function getMessageDefinition<T>(target: unknown): MessageDefinition<T> | undefined {
  if (typeof target !== 'function') return undefined;
  return Reflect.getMetadata(MESSAGE_TYPE_METADATA, target) as MessageDefinition<T> | undefined;
}
