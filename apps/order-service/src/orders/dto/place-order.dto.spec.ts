import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import { PlaceOrderDto } from './place-order.dto';

const VALID = { customerId: 'c-1', items: [{ sku: 'BOOK-1', quantity: 2, unitPrice: 19.99 }] };

/** The failed constraints as `path: message`, as the HTTP 400 lists them. */
async function problems(body: unknown): Promise<string[]> {
  const errors = await validate(plainToInstance(PlaceOrderDto, body), {
    whitelist: true,
    forbidNonWhitelisted: true,
  });
  const flatten = (list: ValidationError[], path: string): string[] =>
    list.flatMap((error) => {
      const here = path ? `${path}.${error.property}` : error.property;
      const own = Object.values(error.constraints ?? {}).map((text) => `${here}: ${text}`);
      return [...own, ...flatten(error.children ?? [], here)];
    });
  return flatten(errors, '');
}

describe('PlaceOrderDto', () => {
  it('accepts a valid order', async () => {
    expect(await problems(VALID)).toEqual([]);
  });

  it("accepts strings at their columns' limits in code points", async () => {
    const body = {
      customerId: '\u2764\ufe0f'.repeat(50),
      items: [{ ...VALID.items[0], sku: '\u{1f600}'.repeat(64) }],
    };
    expect(await problems(body)).toEqual([]);
  });

  it.each([
    ['no customer', { ...VALID, customerId: undefined }, 'customerId: customerId should not be empty'],
    ['no items', { ...VALID, items: [] }, 'items: items must contain at least 1 elements'],
    [
      'a fractional quantity',
      { ...VALID, items: [{ sku: 'A', quantity: 1.5, unitPrice: 1 }] },
      'items.0.quantity: quantity must be an integer number',
    ],
    [
      'a quantity as a string',
      { ...VALID, items: [{ sku: 'A', quantity: '2', unitPrice: 1 }] },
      'items.0.quantity: quantity must be an integer number',
    ],
    [
      'a price with three decimals',
      { ...VALID, items: [{ sku: 'A', quantity: 1, unitPrice: 1.999 }] },
      'items.0.unitPrice: unitPrice must be a number from 0 to 1000000 with at most 2 decimal places',
    ],
    [
      'a negative price',
      { ...VALID, items: [{ sku: 'A', quantity: 1, unitPrice: -5 }] },
      'items.0.unitPrice: unitPrice must be a number from 0 to 1000000 with at most 2 decimal places',
    ],
    ['an unknown property', { ...VALID, discount: 10 }, 'discount: property discount should not exist'],
    [
      'a customerId of 51 hearts with variation selectors: 102 code points, 51 to @MaxLength',
      { ...VALID, customerId: '\u2764\ufe0f'.repeat(51) },
      'customerId: customerId must be at most 100 characters long',
    ],
    [
      'a sku of 65 emoji',
      { ...VALID, items: [{ sku: '\u{1f600}'.repeat(65), quantity: 1, unitPrice: 1 }] },
      'items.0.sku: sku must be at most 64 characters long',
    ],
  ])('refuses %s, naming the field', async (_case, body, problem) => {
    expect(await problems(body)).toContain(problem);
  });
});
