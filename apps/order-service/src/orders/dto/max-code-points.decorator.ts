import { countCodePoints } from 'nestjs-reliable-messaging/safe-json';
import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * Validates a string of at most `max` characters as PostgreSQL counts a `varchar(max)`: in code points. Use it
 * instead of `@MaxLength`, which leaves out variation selectors and so passes strings that overflow the column.
 * Anything but a string passes: that is `@IsString()`'s to refuse, with a message that says so.
 */
export function MaxCodePoints(max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxCodePoints',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || countCodePoints(value) <= max,
        defaultMessage: (args) => `${args?.property ?? 'value'} must be at most ${max} characters long`,
      },
    },
    options,
  );
}
