import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/** A TypeScript block of a Markdown file, with the line of its opening fence (1-based). */
export interface DocsCodeBlock {
  /** The Markdown file, relative to the repository. */
  file: string;
  /** The line of the opening fence. */
  line: number;
  /** The block's text, with the fence's indentation removed. */
  code: string;
  /** Set when the last line before the fence that is not blank is `<!-- not-compiled: <reason> -->`. */
  skipReason?: string;
}

/** A block that does not compile, and the compiler's messages, each at its line in the Markdown file. */
export interface DocsCodeBlockFailure {
  block: DocsCodeBlock;
  messages: string[];
}

const TYPESCRIPT_INFO = new Set(['ts', 'typescript']);
const NOT_COMPILED = /^<!--\s*not-compiled:\s*(\S.*?)\s*-->$/;
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/;
/** A first line `// app.module.ts` names the block's file, so the blocks of one page can import each other. */
const FILE_NAME = /^\/\/ ([\w-]+(?:\.[\w-]+)*\.ts)\s*$/;

/**
 * The ```ts and ```typescript blocks of one Markdown text. Fences of other languages are skipped whole, so a
 * fence shown inside them is not taken for a block; a block inside a list item loses its indentation.
 */
export function extractTypeScriptBlocks(markdown: string, file: string): DocsCodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocsCodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let end = i + 1;
    for (; end < lines.length; end++) {
      const close = FENCE.exec(lines[end]);
      if (close && close[2][0] === fence[0] && close[2].length >= fence.length && close[3] === '') break;
      body.push(lines[end].startsWith(indent) ? lines[end].slice(indent.length) : lines[end].trimStart());
    }
    if (TYPESCRIPT_INFO.has(info.toLowerCase())) {
      // Prettier puts a blank line between an HTML comment and a fence, so the marker is the last line before
      // the fence that is not blank.
      let before = i - 1;
      while (before >= 0 && lines[before].trim() === '') before--;
      const skip = NOT_COMPILED.exec(lines[before]?.trim() ?? '');
      blocks.push({ file, line: i + 1, code: body.join('\n') + '\n', skipReason: skip?.[1] });
    }
    i = end;
  }
  return blocks;
}

/** README.md and every Markdown file under docs/, relative to the repository. */
export function documentationFiles(repoRoot: string): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found.filter((file) => existsSync(join(repoRoot, file))).sort();
}

/**
 * Where the packages' names lead: each entry point of a package's `exports` to its source file (`./typeorm` to
 * `src/typeorm`), or every path under `src` while a library has no package.json yet. A library that does not
 * exist maps anyway, so a block importing it fails with "cannot find module" rather than compiling elsewhere.
 */
function packagePaths(repoRoot: string): Record<string, string[]> {
  const paths: Record<string, string[]> = {};
  const libraries = {
    'nestjs-reliable-messaging': 'reliable-messaging',
    'nestjs-reliable-messaging-admin': 'reliable-messaging-admin',
  };
  for (const [name, folder] of Object.entries(libraries)) {
    const src = join(repoRoot, 'libs', folder, 'src');
    const manifest = join(repoRoot, 'libs', folder, 'package.json');
    const exports = existsSync(manifest)
      ? (JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: Record<string, unknown> }).exports
      : undefined;
    if (exports && typeof exports === 'object' && !Array.isArray(exports)) {
      for (const key of Object.keys(exports)) {
        if (key === '.') paths[name] = [src];
        else if (key.startsWith('./') && !key.includes('*') && key !== './package.json') {
          paths[`${name}/${key.slice(2)}`] = [join(src, key.slice(2))];
        }
      }
    } else {
      paths[name] = [src];
      paths[`${name}/*`] = [join(src, '*')];
    }
  }
  return paths;
}

/**
 * Type-checks the blocks in one Program, each written as a module of its own in a temporary directory (one
 * folder a page, the file named by the block's `// name.ts` first line if it has one), under `strict` with Nest's
 * decorator settings. Imports resolve as from the repository's root: its node_modules, and
 * the packages' names mapped to their sources. Skipped blocks are not compiled.
 */
export function typeCheckBlocks(blocks: DocsCodeBlock[], repoRoot: string): DocsCodeBlockFailure[] {
  const dir = mkdtempSync(join(tmpdir(), 'docs-code-blocks-'));
  try {
    const byPath = new Map<string, DocsCodeBlock>();
    for (const block of blocks) {
      if (block.skipReason !== undefined) continue;
      const page = join(dir, block.file.replace(/[^\w.-]+/g, '_'));
      const name = FILE_NAME.exec(block.code.split('\n', 1)[0])?.[1];
      let path = join(page, name ?? `block-${block.line}.ts`);
      if (byPath.has(path)) path = join(page, `block-${block.line}`, name ?? 'block.ts');
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, block.code);
      byPath.set(path, block);
    }
    const options: ts.CompilerOptions = {
      strict: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ES2022,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      moduleDetection: ts.ModuleDetectionKind.Force,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      typeRoots: [join(repoRoot, 'node_modules', '@types')],
      esModuleInterop: true,
      allowSyntheticDefaultImports: true,
      paths: packagePaths(repoRoot),
      pathsBasePath: repoRoot,
    };
    const host = ts.createCompilerHost(options);
    const cache = ts.createModuleResolutionCache(repoRoot, (name) => name, options);
    // A block's packages resolve as from a file at the repository's root, since the temporary directory has no
    // node_modules above it; its relative imports resolve among the blocks of its page.
    const anchor = join(repoRoot, 'docs-code-block.ts');
    host.resolveModuleNameLiterals = (literals, containingFile, redirected, compilerOptions) =>
      literals.map((literal) =>
        ts.resolveModuleName(
          literal.text,
          byPath.has(containingFile) && !literal.text.startsWith('.') ? anchor : containingFile,
          compilerOptions,
          host,
          cache,
          redirected,
        ),
      );
    const program = ts.createProgram({ rootNames: [...byPath.keys()], options, host });
    // A wrong option or a missing `types` entry belongs to no block, and would otherwise pass unseen.
    const global = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
    if (global.length > 0) {
      throw new Error(ts.formatDiagnostics(global, host));
    }
    const failures: DocsCodeBlockFailure[] = [];
    for (const [path, block] of byPath) {
      const source = program.getSourceFile(path);
      if (!source) throw new Error(`the compiler did not load ${path}`);
      const diagnostics = [
        ...program.getSyntacticDiagnostics(source),
        ...program.getSemanticDiagnostics(source),
      ];
      if (diagnostics.length === 0) continue;
      failures.push({
        block,
        messages: diagnostics.map((diagnostic) => {
          const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n    ');
          const at =
            diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
          return `${block.file}:${block.line + 1 + at}: TS${diagnostic.code} ${text}`;
        }),
      });
    }
    return failures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every TypeScript block of README.md and docs/, read from the repository. */
export function documentationBlocks(repoRoot: string): DocsCodeBlock[] {
  return documentationFiles(repoRoot).flatMap((file) =>
    extractTypeScriptBlocks(readFileSync(join(repoRoot, file), 'utf8'), file),
  );
}
