import { hostname } from 'node:os';
import { Inject, Injectable } from '@nestjs/common';
import { uuidv7 } from './uuid-v7';
import { HEADERS, JSON_CONTENT_TYPE, TRANSACTION_GROUP_PREFIX } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { getMessageDefinition, parseSchemaVersion } from '../decorators/message-type.decorator';
import { PayloadTooLargeError } from '../errors/publish.error';
import { ConfigurationError } from '../errors/configuration.error';
import { MessageContextStorage } from '../context/message-context.storage';
import { LaneDirectory } from '../lanes/lane-directory.service';
import type { PublishOptions, RawMessage } from '../publishing/publish-options';
import { injectCreationContext } from '../tracing/messaging-tracer';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import type { OutboundMessage } from './envelope';

const RESERVED_HEADER_PREFIX = 'rm-';

/** Turns a message and its publish options into an `OutboundMessage` with the full envelope. */
@Injectable()
export class EnvelopeFactory {
  private readonly host = hostname();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly contextStorage: MessageContextStorage,
    private readonly claimChecks: ClaimCheckWriter,
    private readonly lanes: LaneDirectory,
  ) {}

  /**
   * `keyFallback: 'message-id'` lets a message with no idempotency key of its own (class, message or options)
   * use its new message id as its key: a request is one call, deduplicated only against its own redeliveries.
   */
  create(message: object, options: PublishOptions = {}, keyFallback?: 'message-id'): OutboundMessage {
    const messageId = uuidv7();
    const { type, version, payload, idempotencyKey, orderingKey, claimCheck, lane } = this.describe(
      message,
      options,
      keyFallback === 'message-id' ? messageId : undefined,
    );
    const handled = this.contextStorage.current()?.envelope;
    const headers: Record<string, string | number> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (name.toLowerCase().startsWith(RESERVED_HEADER_PREFIX)) {
        throw new ConfigurationError(
          `header '${name}' is reserved: names starting with '${RESERVED_HEADER_PREFIX}' belong to the envelope`,
        );
      }
      headers[name] = value;
    }
    // Readers take the message id for a missing key and a missing correlation id (envelope-reader.ts): neither is
    // written when it would only repeat the message id.
    if (idempotencyKey !== messageId) headers[HEADERS.idempotencyKey] = idempotencyKey;
    headers[HEADERS.schemaVersion] = version;
    headers[HEADERS.occurredAt] = (options.occurredAt ?? new Date()).toISOString();
    const causationId = options.causationId ?? handled?.messageId;
    if (causationId) headers[HEADERS.causationId] = causationId;
    // NOTE: written even where it repeats the message id: the publisher routes on its bucket (ordering-bucket.ts),
    // so a message without a key of its own is ordered only with itself and spread evenly over the partitions of
    // a key-ordered consumer.
    headers[HEADERS.orderingKey] = orderingKey ?? messageId;
    if (lane !== undefined) headers[HEADERS.lane] = this.lanes.check(type, lane);
    const priority = optionalPriority(type, options.priority);

    const { wire: body, claimCheck: stored } = this.claimChecks.offload(
      type,
      claimCheck,
      payload,
      Buffer.from(JSON.stringify(payload), 'utf8'),
      headers,
    );
    if (body.length > this.options.maxPayloadBytes) {
      throw new PayloadTooLargeError(
        `message '${type}' is ${body.length} bytes, above the limit of ${this.options.maxPayloadBytes} (maxPayloadBytes)`,
      );
    }
    const exchange = options.exchange ?? this.options.exchange;
    const routingKey = options.routingKey ?? type;
    const correlationId = options.correlationId ?? handled?.correlationId ?? messageId;
    injectCreationContext(headers, { exchange, routingKey, messageId, type, correlationId });
    return {
      exchange,
      routingKey,
      body,
      orderingKey,
      claimCheck: stored,
      properties: {
        messageId,
        type,
        contentType: JSON_CONTENT_TYPE,
        ...(correlationId === messageId ? {} : { correlationId }),
        appId: this.options.appId,
        timestamp: Math.floor(Date.now() / 1000),
        ...(priority === undefined ? {} : { priority }),
        headers,
      },
    };
  }

  /** The host name recorded in dead-letter headers. */
  get hostName(): string {
    return this.host;
  }

  private describe(message: object, options: PublishOptions, fallbackKey?: string) {
    const definition = getMessageDefinition<object>(message.constructor);
    if (definition) {
      const idempotencyKey = options.idempotencyKey ?? definition.idempotencyKey?.(message) ?? fallbackKey;
      return {
        type: definition.type,
        version: definition.version,
        payload: message,
        idempotencyKey: requireKey(definition.type, idempotencyKey),
        orderingKey: optionalOrderingKey(
          definition.type,
          options.orderingKey ?? definition.orderingKey?.(message),
        ),
        claimCheck: definition.claimCheck,
        lane: options.lane ?? definition.lane,
      };
    }
    const raw = message as Partial<RawMessage>;
    if (typeof raw.type !== 'string' || typeof raw.payload !== 'object' || raw.payload === null) {
      throw new ConfigurationError(
        `cannot publish a ${message.constructor?.name ?? 'value'}: decorate its class with @MessageType() or pass { type, payload }`,
      );
    }
    const version = raw.version ?? '1.0';
    if (!parseSchemaVersion(version)) {
      throw new ConfigurationError(`message '${raw.type}': version must look like '1.0', got '${version}'`);
    }
    return {
      type: raw.type,
      version,
      payload: raw.payload,
      idempotencyKey: requireKey(raw.type, options.idempotencyKey ?? raw.idempotencyKey ?? fallbackKey),
      orderingKey: optionalOrderingKey(raw.type, options.orderingKey ?? raw.orderingKey),
      claimCheck: undefined,
      lane: options.lane ?? raw.lane,
    };
  }
}

function optionalOrderingKey(type: string, key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length === 0 || key.length > 256) {
    throw new ConfigurationError(
      `message '${type}': an ordering key must be a string of 1 to 256 characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
    );
  }
  if (key.startsWith(TRANSACTION_GROUP_PREFIX)) {
    throw new ConfigurationError(
      `message '${type}': an ordering key must not start with '${TRANSACTION_GROUP_PREFIX}', which the outbox keeps for the messages of one transaction without a key`,
    );
  }
  return key;
}

function optionalPriority(type: string, priority: unknown): number | undefined {
  if (priority === undefined) return undefined;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 255) {
    throw new ConfigurationError(
      `message '${type}': priority must be an integer from 0 to 255 (5 and above is high on quorum queues), got ${JSON.stringify(priority) ?? typeof priority}`,
    );
  }
  return priority;
}

function requireKey(type: string, key: string | undefined): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 256) {
    throw new ConfigurationError(
      `message '${type}' needs an idempotency key of 1 to 256 characters: set idempotencyKey in @MessageType(), on the { type, payload } message, or in the publish options`,
    );
  }
  return key;
}
