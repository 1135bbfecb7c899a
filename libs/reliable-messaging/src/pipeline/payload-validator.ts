// NOTE: the declaration of class-transformer's storage module is referenced by the file that needs it, so a build
// that compiles this file from outside the package's own tsconfig (the admin package's) sees it too.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="../types/class-transformer-storage.d.ts" />
import { plainToInstance } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { validate, type ValidationError, type ValidatorOptions } from 'class-validator';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { ValidationPlan } from './validation-plan';

/** Turns a parsed body into an instance of the message class; throws or rejects with InvalidMessageError. */
export type PayloadValidator = (body: unknown) => object | Promise<object>;

/** Unknown properties are stripped rather than refused, so producers can add optional fields first. */
const VALIDATOR_OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: false,
  forbidUnknownValues: true,
};

/**
 * The validator of one message class: class-transformer's `plainToInstance`, then class-validator. A payload
 * the class's ValidationPlan proves valid is returned at once, so the decode stage adds no promise for it;
 * any other (invalid, or with constraints a plan cannot check) goes through class-validator's `validate`,
 * which decides and describes what is wrong.
 */
export function payloadValidator(messageClass: new () => object): PayloadValidator {
  const plan = ValidationPlan.of(messageClass);
  const toInstance = hasTransformMetadata(messageClass)
    ? (body: object) => plainToInstance(messageClass, body)
    : jsonAssigner(messageClass);
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new InvalidMessageError('validation-failed', 'body must be a JSON object');
    }
    let instance: object;
    try {
      instance = toInstance(body);
      if (plan?.passes(instance)) return instance;
    } catch (error) {
      throw refusalOfOverflow(error);
    }
    return validate(instance, VALIDATOR_OPTIONS).then(
      (errors) => checked(instance, errors),
      (error: unknown) => {
        throw refusalOfOverflow(error);
      },
    );
  };
}

/**
 * NOTE: class-transformer and class-validator recurse once per level of the body, and a body deep enough
 * overflows the stack with a RangeError. That is the message's fault, the same on every attempt, so it is a
 * refusal: the decode stage's `jsonLimits.maxDepth` refuses such bodies first, and this catches the rest (a
 * limit raised too far, a class whose own code recurses). Any other error passes on as it was.
 */
function refusalOfOverflow(error: unknown): unknown {
  if (!(error instanceof RangeError)) return error;
  return new InvalidMessageError(
    'validation-failed',
    `the body could not be transformed or validated: ${error.message} (is it nested too deep? see jsonLimits.maxDepth)`,
  );
}

/** The parts of class-transformer's metadata storage that tell whether a class has any of its decorators. */
interface TransformMetadataMaps {
  _typeMetadatas: Map<unknown, unknown>;
  _transformMetadatas: Map<unknown, unknown>;
  _exposeMetadatas: Map<unknown, unknown>;
  _excludeMetadatas: Map<unknown, unknown>;
}

/**
 * Whether `messageClass` or a class it extends carries a class-transformer decorator (`@Type`, `@Transform`,
 * `@Expose`, `@Exclude`). Without one, `plainToInstance` of a parsed JSON object is the copy `jsonAssigner` makes.
 *
 * NOTE: class-transformer 0.5 keeps its metadata in four maps keyed by class and offers no public question
 * "does this class have any"; should their names change, every class counts as having some (the library path).
 */
function hasTransformMetadata(messageClass: new () => object): boolean {
  const maps = defaultMetadataStorage as unknown as Partial<TransformMetadataMaps>;
  const all = [maps._typeMetadatas, maps._transformMetadatas, maps._exposeMetadatas, maps._excludeMetadatas];
  if (all.some((map) => !(map instanceof Map))) return true;
  for (let target: unknown = messageClass; typeof target === 'function' && target !== Function.prototype;) {
    if (all.some((map) => map!.has(target))) return true;
    target = Object.getPrototypeOf(target);
  }
  return false;
}

/**
 * What `plainToInstance` makes of a parsed JSON object for a class without class-transformer decorators, at a
 * fraction of its cost (it reads its metadata for every property of every message): the class's instance with
 * each property of the body set on it, except a method and a property its prototypes define without a setter (a
 * getter), which class-transformer skips too. Where class-transformer would throw, on a getter a class inherits,
 * this skips as well: a body naming it is the sender's mistake, not a reason to retry. Nested values are the
 * parse's own, fresh for every message.
 */
function jsonAssigner(messageClass: new () => object): (body: object) => object {
  const readOnly = new Set<string>();
  for (
    let prototype = messageClass.prototype as object | null;
    prototype && prototype !== Object.prototype;
  ) {
    for (const [key, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(prototype))) {
      if (!descriptor.set && !readOnly.has(key)) readOnly.add(key);
    }
    prototype = Object.getPrototypeOf(prototype) as object | null;
  }
  return (body) => {
    const instance = new messageClass() as Record<string, unknown>;
    for (const key of Object.keys(body)) {
      if (key === '__proto__' || readOnly.has(key) || typeof instance[key] === 'function') continue;
      instance[key] = (body as Record<string, unknown>)[key];
    }
    return instance;
  };
}

function checked(instance: object, errors: ValidationError[]): object {
  if (errors.length > 0) throw new InvalidMessageError('validation-failed', describe(errors).join('; '));
  return instance;
}

function describe(errors: ValidationError[], path = ''): string[] {
  return errors.flatMap((error) => {
    const here = path ? `${path}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((text) => `${here}: ${text}`);
    return [...own, ...describe(error.children ?? [], here)];
  });
}
