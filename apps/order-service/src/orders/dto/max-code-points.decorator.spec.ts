import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { validate } from 'class-validator';
import { MaxCodePoints } from './max-code-points.decorator';

class Named {
  @MaxCodePoints(4)
  name!: unknown;
}

async function problems(name: unknown): Promise<string[]> {
  const errors = await validate(Object.assign(new Named(), { name }));
  return errors.flatMap((error) => Object.values(error.constraints ?? {}));
}

describe('@MaxCodePoints', () => {
  it.each([
    ['4 ASCII characters', 'abcd'],
    ['4 emoji, 8 UTF-16 code units', '😀😀😀😀'],
    ['2 hearts with their variation selectors, 4 code points', '❤️❤️'],
  ])('accepts %s at a limit of 4', async (_what, name) => {
    expect(await problems(name)).toEqual([]);
  });

  it.each([
    ['5 ASCII characters', 'abcde'],
    ['5 emoji', '😀😀😀😀😀'],
    ['3 hearts with their variation selectors, 6 code points that @MaxLength(4) counts as 3', '❤️❤️❤️'],
  ])('refuses %s at a limit of 4', async (_what, name) => {
    expect(await problems(name)).toEqual(['name must be at most 4 characters long']);
  });

  it('leaves a value that is not a string to @IsString', async () => {
    expect(await problems(12345)).toEqual([]);
  });
});
