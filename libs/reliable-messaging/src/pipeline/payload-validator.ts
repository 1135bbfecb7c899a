import { plainToInstance } from 'class-transformer';
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
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new InvalidMessageError('validation-failed', 'body must be a JSON object');
    }
    const instance = plainToInstance(messageClass, body);
    if (plan?.passes(instance)) return instance;
    return validate(instance, VALIDATOR_OPTIONS).then((errors) => checked(instance, errors));
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
