import { describe, expect, it } from '@jest/globals';
import { callTree, flameGraphSvg, timeByKind, whereOf, type CpuProfile } from './flame-graph';

const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });

/**
 * (root) → main (bench) → publish (module) → write (node:net); main also calls query (pg) twice from two lines,
 * which V8 keeps as two nodes; (idle) and (garbage collector) hang from the root.
 */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 6, 7] },
    { id: 2, callFrame: frame('main', 'file:///repo/dist/bench/run.js'), children: [3, 5, 8] },
    {
      id: 3,
      callFrame: frame(
        'publish',
        'file:///repo/dist/libs/reliable-messaging/src/outbox/outbox-relay.service.js',
      ),
      children: [4],
    },
    { id: 4, callFrame: frame('write', 'node:net'), children: [] },
    { id: 5, callFrame: frame('query', 'file:///repo/node_modules/pg/lib/client.js'), children: [] },
    { id: 6, callFrame: frame('(idle)'), children: [] },
    { id: 7, callFrame: frame('(garbage collector)'), children: [] },
    { id: 8, callFrame: frame('query', 'file:///repo/node_modules/pg/lib/client.js'), children: [] },
  ],
  // Each sample's time is the gap to the next: 4 → 10 µs, 5 → 20, 8 → 5, 6 → 100 (idle), 7 → 15, 3 → 0 (last).
  samples: [4, 5, 8, 6, 7, 3],
  timeDeltas: [0, 10, 20, 5, 100, 15],
};

describe('flame graphs of CPU profiles', () => {
  it('names where code lives: a package, a Node internal, the module or the app', () => {
    expect(whereOf('file:///x/node_modules/@nestjs/core/router.js')).toEqual({
      where: '@nestjs/core',
      kind: 'library',
    });
    expect(whereOf('file:///x/node_modules/a/node_modules/pg/lib/client.js')).toEqual({
      where: 'pg',
      kind: 'library',
    });
    expect(whereOf('node:internal/async_hooks')).toEqual({
      where: 'node:internal/async_hooks',
      kind: 'node',
    });
    expect(whereOf('file:///x/dist/libs/reliable-messaging/src/outbox/outbox-store.service.js')).toEqual({
      where: 'libs/reliable-messaging/outbox/outbox-store.service',
      kind: 'module',
    });
    expect(whereOf('file:///x/dist/apps/order-service/src/payment.consumer.js').kind).toBe('app');
  });

  it('merges call sites of one function, leaves idle time out and times each frame from its samples', () => {
    const tree = callTree(profile);
    expect(tree.totalUs).toBe(50);
    expect(tree.children.map((child) => child.label)).toEqual(['(garbage collector)', 'main (bench/run)']);
    const main = tree.children[1];
    expect(main.totalUs).toBe(35);
    expect(main.children.map((child) => [child.label, child.totalUs])).toEqual([
      ['publish (libs/reliable-messaging/outbox/outbox-relay.service)', 10],
      ['query (pg)', 25],
    ]);
    expect(timeByKind(tree)).toEqual({ module: 0, app: 0, library: 25, node: 10, gc: 15, other: 0 });
  });

  it('draws one box per frame at least a pixel wide, with its time in a tooltip, and escapes labels', () => {
    const svg = flameGraphSvg(profile, { title: 'a <relay> & "keys"', width: 520 });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('a &#60;relay&#62; &#38; &#34;keys&#34;');
    expect(svg).toContain('<title>query (pg): 0.0 ms, 50.0%');
    expect(svg).toContain('busy 0 ms of CPU: the module 0.0% · app and benchmark 0.0% · packages 50.0%');
    expect(svg.match(/<rect /g)).toHaveLength(1 + 6);
  });
});
