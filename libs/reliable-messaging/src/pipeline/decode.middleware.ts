import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { readAttempt, readEnvelope } from '../envelope/envelope-reader';
import { parseJsonBody } from '../envelope/safe-json';
import { parseSchemaVersion } from '../decorators/message-type.decorator';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import type { MessageMiddleware } from './message-middleware';

/**
 * Reads the envelope and turns the body into the handler's payload: size limit, content type, strict UTF-8,
 * JSON without prototype keys, accepted type and schema major version, then class-validator. Unknown
 * properties are stripped rather than refused, so producers can add optional fields before consumers deploy.
 * Every refusal is an InvalidMessageError, which is never retried.
 */
export function decodeMiddleware(consumer: ConsumerDefinition, maxPayloadBytes: number): MessageMiddleware {
  const acceptedTypes = new Set(consumer.messageTypes);
  const acceptedMajors = new Set(consumer.acceptedMajorVersions);
  return (next) => async (delivery) => {
    delivery.attempt = readAttempt(delivery.raw);
    const envelope = readEnvelope(delivery.raw);
    delivery.envelope = envelope;
    if (delivery.raw.content.length > maxPayloadBytes) {
      throw new InvalidMessageError(
        'payload-too-large',
        `body is ${delivery.raw.content.length} bytes, above the limit of ${maxPayloadBytes}`,
      );
    }
    if (acceptedTypes.size > 0 && !acceptedTypes.has(envelope.type)) {
      throw new InvalidMessageError(
        'unknown-message-type',
        `'${envelope.type}' is not handled by ${consumer.name} (accepts ${[...acceptedTypes].join(', ')})`,
      );
    }
    const major = parseSchemaVersion(envelope.schemaVersion)?.major;
    if (acceptedMajors.size > 0 && (major === undefined || !acceptedMajors.has(major))) {
      throw new InvalidMessageError(
        'unsupported-schema-version',
        `schema version ${envelope.schemaVersion} of '${envelope.type}' is not supported by ${consumer.name} (accepts major ${[...acceptedMajors].join(', ')})`,
      );
    }
    const body = parseJsonBody(delivery.raw.content);
    delivery.payload = consumer.messageClass ? await toMessage(consumer.messageClass, body) : body;
    await next(delivery);
  };
}

async function toMessage(messageClass: new () => object, body: unknown): Promise<object> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidMessageError('validation-failed', 'body must be a JSON object');
  }
  const instance = plainToInstance(messageClass, body);
  const errors = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: false,
    forbidUnknownValues: true,
  });
  if (errors.length > 0) {
    throw new InvalidMessageError('validation-failed', describe(errors).join('; '));
  }
  return instance;
}

function describe(errors: ValidationError[], path = ''): string[] {
  return errors.flatMap((error) => {
    const here = path ? `${path}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((text) => `${here}: ${text}`);
    return [...own, ...describe(error.children ?? [], here)];
  });
}
