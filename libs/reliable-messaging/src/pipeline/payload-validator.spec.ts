import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Exclude, plainToInstance, Transform, Type } from 'class-transformer';
import { Allow, IsInt, IsOptional, IsString, ValidateNested } from 'class-validator';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { payloadValidator } from './payload-validator';

class Plain {
  @IsString() orderId!: string;
  @IsOptional() @IsInt() quantity = 1;
  @Allow() details?: { lines: { sku: string }[] };
  @Allow() get label(): string {
    return `order ${this.orderId}`;
  }
  @Allow() describe(): string {
    return this.orderId;
  }
}

class Derived extends Plain {
  @IsString() region!: string;
}

class Line {
  @IsString() sku!: string;
}

class Typed {
  @ValidateNested({ each: true }) @Type(() => Line) lines!: Line[];
}

class Transformed {
  @Transform(({ value }: { value: string }) => value.trim()) @IsString() name!: string;
}

class Excluding {
  @IsString() name!: string;
  @Exclude() @Allow() secret?: string;
}

class ParentTyped {
  @ValidateNested() @Type(() => Line) line!: Line;
}

class ChildOfTyped extends ParentTyped {
  @IsString() extra!: string;
}

/** What class-transformer itself makes of the body, with the unknown properties stripped as the validator does. */
function expected<T extends object>(cls: new () => T, body: object, allowed: string[]): T {
  const instance = plainToInstance(cls, body) as Record<string, unknown>;
  for (const key of Object.keys(instance)) if (!allowed.includes(key)) delete instance[key];
  return instance as T;
}

class Chain {
  @IsOptional() @ValidateNested() @Type(() => Chain) next?: Chain;
}

describe('payloadValidator', () => {
  const body = () => ({
    orderId: 'o-1',
    details: { lines: [{ sku: 'a' }] },
    label: 'forged',
    describe: 'forged',
    unknown: 1,
  });

  it.each([
    ['a class without class-transformer decorators', Plain, body(), ['orderId', 'quantity', 'details']],
    [
      'a class extending one',
      Derived,
      { ...body(), region: 'eu' },
      ['orderId', 'quantity', 'details', 'region'],
    ],
  ])('turns a body into %s exactly as plainToInstance does', async (_name, cls, input, allowed) => {
    const result = await payloadValidator(cls)(structuredClone(input));
    expect(result).toBeInstanceOf(cls);
    // class-transformer throws on a getter the class inherits; the validator skips it, as it does an own one.
    const { label: _forged, ...withoutLabel } = structuredClone(input);
    expect(result).toEqual(expected(cls as new () => object, withoutLabel, allowed));
    // Not set over the class's getter and method, kept at the class's default when the body has none.
    expect((result as Plain).label).toBe('order o-1');
    expect(typeof (result as Plain).describe).toBe('function');
    expect((result as Plain).quantity).toBe(1);
  });

  it.each([
    [
      '@Type()',
      Typed,
      { lines: [{ sku: 'a' }] },
      (r: object) => expect((r as Typed).lines[0]).toBeInstanceOf(Line),
    ],
    [
      '@Transform()',
      Transformed,
      { name: '  Ada ' },
      (r: object) => expect((r as Transformed).name).toBe('Ada'),
    ],
    [
      '@Exclude()',
      Excluding,
      { name: 'n', secret: 's' },
      (r: object) => expect((r as Excluding).secret).toBeUndefined(),
    ],
    [
      '@Type() on a class it extends',
      ChildOfTyped,
      { line: { sku: 'a' }, extra: 'x' },
      (r: object) => expect((r as ChildOfTyped).line).toBeInstanceOf(Line),
    ],
  ])('leaves a class with %s to class-transformer', async (_name, cls, input, check) => {
    const result = await payloadValidator(cls)(input);
    check(result);
  });

  it('never lets an own __proto__ key of a body replace the instance prototype', async () => {
    const forged = JSON.parse('{"orderId":"o-1","__proto__":{"isAdmin":true}}') as object;
    const result = await payloadValidator(Plain)(forged);
    expect(result).toBeInstanceOf(Plain);
    expect((result as { isAdmin?: boolean }).isAdmin).toBeUndefined();
  });

  it("refuses, never retries, a body so deep that class-transformer's recursion overflows the stack", async () => {
    const depth = 20_000;
    const deep: unknown = JSON.parse(`${'{"next":'.repeat(depth)}{}${'}'.repeat(depth)}`);

    const outcome = await Promise.resolve()
      .then(() => payloadValidator(Chain)(deep))
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    expect(outcome).toBeInstanceOf(InvalidMessageError);
    expect((outcome as InvalidMessageError).reason).toBe('validation-failed');
    expect((outcome as InvalidMessageError).message).toMatch(
      /Maximum call stack size exceeded.*jsonLimits\.maxDepth/,
    );
  });
});
