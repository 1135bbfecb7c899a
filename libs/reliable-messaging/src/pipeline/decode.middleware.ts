import { InvalidMessageError } from '../errors/invalid-message.error';
import { readAttempt, readEnvelope } from '../envelope/envelope-reader';
import { isNestRmqDelivery, readNestRmqPacket } from '../envelope/nest-rmq-packet';
import { parseJsonBody } from '../envelope/safe-json';
import { parseSchemaVersion } from '../decorators/message-type.decorator';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { Envelope } from '../envelope/envelope';
import type { InboundDelivery } from './inbound-delivery';
import type { MessageMiddleware } from './message-middleware';
import { payloadValidator } from './payload-validator';

/**
 * Reads the envelope and turns the body into the handler's payload: size limit, content type, strict UTF-8,
 * JSON within the module's `jsonLimits` (checked before it is parsed), accepted type and schema major version, then class-validator. A consumer that
 * accepts `nest-rmq` reads a message without the `type` property as Nest's `{pattern, data}` body, with the same
 * limits and checks (envelope/nest-rmq-packet.ts). Unknown
 * properties are stripped rather than refused, so producers can add optional fields before consumers deploy.
 * Every refusal is an InvalidMessageError, which is never retried. All of it is synchronous unless the message
 * class has asynchronous constraints, so a delivery usually passes without a promise of this stage's own.
 */
export function decodeStage(
  consumer: Pick<
    ConsumerPlan,
    | 'name'
    | 'messageClass'
    | 'messageTypes'
    | 'acceptedMajorVersions'
    | 'maxPayloadBytes'
    | 'jsonLimits'
    | 'accept'
  >,
): MessageMiddleware {
  const { maxPayloadBytes, jsonLimits } = consumer;
  const acceptedTypes = new Set(consumer.messageTypes);
  const acceptedMajors = new Set(consumer.acceptedMajorVersions);
  const acceptsNestRmq = consumer.accept.includes('nest-rmq');
  const validatePayload = consumer.messageClass ? payloadValidator(consumer.messageClass) : undefined;
  // The major version of the last schema version seen: a consumer's messages mostly share one.
  let lastVersion: string | undefined;
  let lastMajor: number | undefined;
  const checkSize = (bytes: number): void => {
    if (bytes > maxPayloadBytes) {
      throw new InvalidMessageError(
        'payload-too-large',
        `body is ${bytes} bytes, above the limit of ${maxPayloadBytes}`,
      );
    }
  };
  const decode = (delivery: InboundDelivery): unknown => {
    delivery.attempt = readAttempt(delivery.raw);
    const content = delivery.claimedBody ?? delivery.raw.content;
    let envelope: Envelope;
    let packet: { data: unknown } | undefined;
    if (acceptsNestRmq && isNestRmqDelivery(delivery.raw)) {
      // Nest's format carries its type in the body, so its body is parsed (within the limit) before it is checked.
      checkSize(delivery.raw.content.length);
      const read = readNestRmqPacket(delivery.raw, content, jsonLimits);
      envelope = delivery.envelope = read.envelope;
      packet = read;
    } else {
      envelope = delivery.envelope = readEnvelope(delivery.raw);
      checkSize(delivery.raw.content.length);
    }
    if (acceptedTypes.size > 0 && !acceptedTypes.has(envelope.type)) {
      throw new InvalidMessageError(
        'unknown-message-type',
        `${packet ? 'pattern ' : ''}'${envelope.type}' is not handled by ${consumer.name} (accepts ${[...acceptedTypes].join(', ')})`,
      );
    }
    if (envelope.schemaVersion !== lastVersion) {
      lastVersion = envelope.schemaVersion;
      lastMajor = parseSchemaVersion(lastVersion)?.major;
    }
    const major = lastMajor;
    if (acceptedMajors.size > 0 && (major === undefined || !acceptedMajors.has(major))) {
      throw new InvalidMessageError(
        'unsupported-schema-version',
        `schema version ${envelope.schemaVersion} of '${envelope.type}' is not supported by ${consumer.name} (accepts major ${[...acceptedMajors].join(', ')})`,
      );
    }
    const body = packet ? packet.data : parseJsonBody(content, jsonLimits);
    return validatePayload ? validatePayload(body) : body;
  };
  return (next) => (delivery) => {
    let payload: unknown;
    try {
      payload = decode(delivery);
    } catch (error) {
      return Promise.reject(error);
    }
    if (payload instanceof Promise) {
      return payload.then((validated: unknown) => {
        delivery.payload = validated;
        return next(delivery);
      });
    }
    delivery.payload = payload;
    return next(delivery);
  };
}
