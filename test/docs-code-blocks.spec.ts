import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  documentationBlocks,
  extractTypeScriptBlocks,
  typeCheckBlocks,
  type DocsCodeBlock,
  type DocsCodeBlockFailure,
} from './support/docs-code-blocks';

const REPO = process.cwd();

/** Two blocks compiled beside the docs' own, in the same Program, to prove the check fails where it should. */
const FIXTURE = [
  '# fixture',
  '',
  '```ts',
  "import { MessageType } from 'nestjs-reliable-messaging';",
  '',
  "@MessageType({ type: 'order.placed', idempotencyKey: (m) => `order:${m.orderId}` })",
  'export class OrderPlaced {',
  '  orderId!: string;',
  '}',
  '```',
  '',
  '```typescript',
  "import { MessageType } from 'nestjs-reliable-messaging';",
  '',
  "@MessageType({ type: 'order.placed', idempotencyKey: (m: OrderPlaced) => `order:${m.orderId}` })",
  'export class OrderPlaced {',
  '  orderId!: string;',
  '}',
  '```',
  '',
].join('\n');

describe('the TypeScript blocks of README.md and docs/', () => {
  let blocks: DocsCodeBlock[];
  let failures: DocsCodeBlockFailure[];

  beforeAll(() => {
    blocks = documentationBlocks(REPO);
    failures = typeCheckBlocks([...blocks, ...extractTypeScriptBlocks(FIXTURE, 'fixture.md')], REPO);
  }, 60_000);

  it('finds the blocks, most of them compiled', () => {
    const compiled = blocks.filter((block) => block.skipReason === undefined);
    expect(compiled.length).toBeGreaterThan(30);
    expect(compiled.length).toBeGreaterThan(blocks.length / 2);
  });

  it('compiles every block under strict, each as a module of its own', () => {
    const messages = failures.filter((f) => f.block.file !== 'fixture.md').flatMap((f) => f.messages);
    expect(messages).toEqual([]);
  });

  it('reports a block that does not compile at its file and line (TS18046 on an untyped idempotencyKey)', () => {
    const fixture = failures.filter((f) => f.block.file === 'fixture.md');
    expect(fixture.map((f) => f.block.line)).toEqual([3]);
    expect(fixture[0].messages).toEqual([
      expect.stringMatching(/^fixture\.md:6: TS18046 'm' is of type 'unknown'/),
    ]);
  });
});

describe('extractTypeScriptBlocks', () => {
  it('takes ts and typescript fences, in lists too, skips other languages and marked blocks', () => {
    const markdown = [
      '```bash', // 1
      '```ts', // 2: inside the bash block, not a fence of its own
      '```', // 3
      '<!-- not-compiled: uses another library -->', // 4
      '', // 5: Prettier's blank line after an HTML comment
      '```ts', // 6
      'before();', // 7
      '```', // 8
      '- a list item:', // 9
      '', // 10
      '  ```typescript', // 11
      '  const a: number = 1;', // 12
      '    const b = a;', // 13
      '  ```', // 14
      '````ts', // 15
      '```', // 16: shorter than its opening fence, so part of the block
      '````', // 17
    ].join('\n');
    expect(extractTypeScriptBlocks(markdown, 'x.md')).toEqual([
      { file: 'x.md', line: 6, code: 'before();\n', skipReason: 'uses another library' },
      { file: 'x.md', line: 11, code: 'const a: number = 1;\n  const b = a;\n', skipReason: undefined },
      { file: 'x.md', line: 15, code: '```\n', skipReason: undefined },
    ]);
  });
});
