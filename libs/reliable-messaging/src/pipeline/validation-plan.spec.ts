import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { plainToInstance, Type } from 'class-transformer';
import {
  Allow,
  IsDefined,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Min,
  registerDecorator,
  validateSync,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { payloadValidator } from './payload-validator';
import { ValidationPlan } from './validation-plan';

class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() @Min(0) totalCents!: number;
  @IsString() @Length(3, 3) currency!: string;
  @IsOptional() @IsString() note?: string;
  @IsDefined() customerId!: unknown;
  @ValidateIf((order: OrderPlaced) => order.totalCents > 100) @IsString() approvedBy?: string;
  @IsString({ each: true }) tags: string[] = [];
  @Allow() anything?: unknown;
}

class Line {
  @IsString() sku!: string;
}

class WithLines {
  @ValidateNested({ each: true }) @Type(() => Line) lines!: Line[];
}

class Undecorated {
  id?: string;
}

/** A constraint that answers with a promise without declaring itself asynchronous. */
function ResolvesTrue(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'resolvesTrue',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: { validate: () => Promise.resolve(true) },
    });
}

class WithPromise {
  @ResolvesTrue() id!: string;
}

const VALID = {
  orderId: 'o-1',
  totalCents: 50,
  currency: 'EUR',
  customerId: 7,
  tags: ['a', 'b'],
};

function planOf(messageClass: new () => object): ValidationPlan {
  const plan = ValidationPlan.of(messageClass);
  if (!plan) throw new Error(`no plan for ${messageClass.name}`);
  return plan;
}

describe('ValidationPlan', () => {
  it.each([
    ['a valid payload', VALID],
    ['an optional property left out or null', { ...VALID, note: null }],
    ['a conditional property whose condition is false', { ...VALID, approvedBy: 42 }],
    [
      'a conditional property whose condition holds and that is valid',
      { ...VALID, totalCents: 500, approvedBy: 'x' },
    ],
  ])('passes %s, as class-validator does', (_, body) => {
    const instance = plainToInstance(OrderPlaced, body);
    expect(planOf(OrderPlaced).passes(instance)).toBe(true);
    expect(validateSync(instance, { whitelist: true, forbidUnknownValues: true })).toEqual([]);
  });

  it.each([
    ['a wrong type', { ...VALID, totalCents: '50' }],
    ['a failed second constraint', { ...VALID, totalCents: -1 }],
    ['a missing required property', { ...VALID, orderId: undefined }],
    ['a missing @IsDefined property', { ...VALID, customerId: undefined }],
    ['a wrong array item', { ...VALID, tags: ['a', 3] }],
    ['a conditional property whose condition holds and that is invalid', { ...VALID, totalCents: 500 }],
  ])('does not pass %s, which class-validator refuses', (_, body) => {
    const instance = plainToInstance(OrderPlaced, body);
    expect(planOf(OrderPlaced).passes(instance)).toBe(false);
    expect(validateSync(instance, { whitelist: true, forbidUnknownValues: true })).not.toEqual([]);
  });

  it('strips the properties no decorator names, like whitelist', () => {
    const instance = plainToInstance(OrderPlaced, { ...VALID, extra: 1, anything: 2 });
    expect(planOf(OrderPlaced).passes(instance)).toBe(true);
    expect(instance).not.toHaveProperty('extra');
    expect(instance).toHaveProperty('anything', 2);
  });

  it('leaves a constraint that answers with a promise to class-validator', () => {
    expect(planOf(WithPromise).passes(plainToInstance(WithPromise, { id: 'x' }))).toBe(false);
  });

  it.each([
    ['nested validation', WithLines],
    ['no constraints at all', Undecorated],
  ])('has no plan for a class with %s', (_, messageClass) => {
    expect(ValidationPlan.of(messageClass)).toBeUndefined();
  });
});

describe('payloadValidator', () => {
  it('returns a payload the plan proves valid at once, as an instance of the class', () => {
    const payload = payloadValidator(OrderPlaced)({ ...VALID, extra: true });
    expect(payload).toBeInstanceOf(OrderPlaced);
    expect(payload).not.toHaveProperty('extra');
  });

  it("refuses an invalid payload with class-validator's description", async () => {
    await expect(
      Promise.resolve().then(() => payloadValidator(OrderPlaced)({ ...VALID, currency: 'EURO' })),
    ).rejects.toThrow(
      new InvalidMessageError(
        'validation-failed',
        'currency: currency must be shorter than or equal to 3 characters',
      ),
    );
  });

  it('awaits a constraint that answers with a promise', async () => {
    await expect(payloadValidator(WithPromise)({ id: 'x' })).resolves.toBeInstanceOf(WithPromise);
  });
});
