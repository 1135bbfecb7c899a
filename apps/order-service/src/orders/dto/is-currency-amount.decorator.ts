import { ValidateBy, type ValidationOptions } from 'class-validator';
import { isCurrencyAmount, MAX_UNIT_PRICE } from '../money.util';

/** Validates a JSON number from 0 to `max` (default 1 000 000) with at most two decimal places. */
export function IsCurrencyAmount(max = MAX_UNIT_PRICE, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isCurrencyAmount',
      validator: {
        validate: (value: unknown) => isCurrencyAmount(value, max),
        defaultMessage: (args) =>
          `${args?.property ?? 'value'} must be a number from 0 to ${max} with at most 2 decimal places`,
      },
    },
    options,
  );
}
