import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The packages' entry points are listed in their package.json `exports`, which is what users import. The
 * repository's own code reaches them through tsconfig.json's `paths` and Jest's moduleNameMapper, and the lint
 * rule reads `exports` itself. These must agree, or a spec could pass against an entry point users do not have.
 */
/** Jest runs from the repository's root. */
const root = process.cwd();

const LIBRARIES = [
  { name: 'nestjs-reliable-messaging', dir: 'libs/reliable-messaging' },
  { name: 'nestjs-reliable-messaging-admin', dir: 'libs/reliable-messaging-admin' },
];

interface Condition {
  types: string;
  default: string;
}

/** Each import specifier of a package with the source file its builds come from. */
function entryPoints(library: { name: string; dir: string }): Array<{ specifier: string; source: string }> {
  const manifest = JSON.parse(readFileSync(join(root, library.dir, 'package.json'), 'utf8')) as {
    exports: Record<string, { import: Condition; require: Condition } | string>;
  };
  return Object.entries(manifest.exports)
    .filter(([key]) => key !== './package.json')
    .map(([key, target]) => {
      if (typeof target === 'string')
        throw new Error(`${library.name} ${key}: expected import/require conditions`);
      const built = target.import.default.replace(/^\.\/dist\/esm\//, '').replace(/\.js$/, '.ts');
      return {
        specifier: key === '.' ? library.name : `${library.name}/${key.slice('./'.length)}`,
        source: join(library.dir, 'src', built),
      };
    });
}

const all = LIBRARIES.flatMap(entryPoints);

describe("the packages' entry points", () => {
  it.each(all)('$specifier is built from a source file that exists ($source)', ({ source }) => {
    expect(existsSync(join(root, source))).toBe(true);
  });

  it("tsconfig.json's paths map exactly the entry points, each to its source", () => {
    const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as {
      compilerOptions: { paths: Record<string, string[]> };
    };
    const paths = Object.fromEntries(
      Object.entries(tsconfig.compilerOptions.paths).map(([key, [target]]) => [key, join(target)]),
    );
    expect(paths).toEqual(Object.fromEntries(all.map(({ specifier, source }) => [specifier, source])));
  });

  it("Jest's moduleNameMapper sends each entry point to its source and no other path of a package", async () => {
    const { default: config } = (await import(join(root, 'jest.config.cjs'))) as {
      default: { moduleNameMapper: Record<string, string> };
    };
    const { moduleNameMapper } = config;
    const mapped = (specifier: string): string | undefined => {
      for (const [pattern, target] of Object.entries(moduleNameMapper)) {
        const match = new RegExp(pattern).exec(specifier);
        if (match)
          return join(target.replace('<rootDir>/', '').replace(/\$(\d)/g, (_, n) => match[Number(n)]));
      }
      return undefined;
    };
    for (const { specifier, source } of all)
      expect([specifier, mapped(specifier)]).toEqual([specifier, source]);
    expect(mapped('nestjs-reliable-messaging/options/known-keys')).toBeUndefined();
    expect(mapped('nestjs-reliable-messaging-admin/http/console/html')).toBeUndefined();
  });
});
