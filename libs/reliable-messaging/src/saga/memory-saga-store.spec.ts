import { describe, expect, it } from '@jest/globals';
import { MemorySagaStore } from './memory-saga-store';
import type { StepWrite } from './saga-store';

const step = (fields: Partial<StepWrite>): StepWrite => ({
  saga: 'order',
  correlationKey: 'o-1',
  expectedVersion: 0,
  state: '{"n":1}',
  timeouts: [],
  status: 'active',
  outcome: 'started',
  messageId: 'm-1',
  messageType: 'order.placed',
  step: 'Order.onPlaced',
  ...fields,
});

describe('MemorySagaStore: the rules of rm_saga, in memory', () => {
  it('starts an instance once: a second start of the key writes nothing', async () => {
    const store = new MemorySagaStore();
    expect(await store.write(undefined, step({}))).toBe(true);
    expect(await store.write(undefined, step({ messageId: 'm-2', state: '{"n":2}' }))).toBe(false);
    expect(await store.load(undefined, 'order', 'o-1', false)).toMatchObject({ version: 1, state: { n: 1 } });
  });

  it.each([
    ['the version the step read', 1, true],
    ['a version another step moved on from', 2, false],
  ])('continues an instance only at %s', async (_case, expectedVersion, written) => {
    const store = new MemorySagaStore();
    await store.write(undefined, step({}));
    const { id } = (await store.load(undefined, 'order', 'o-1', false))!;
    const result = await store.write(
      undefined,
      step({ id, expectedVersion, state: '{"n":2}', outcome: 'continued', messageId: 'm-2' }),
    );
    expect(result).toBe(written);
    expect((await store.load(undefined, 'order', 'o-1', false))?.version).toBe(written ? 2 : 1);
  });

  it('gives each load its own copy of the state, as a read of the row would', async () => {
    const store = new MemorySagaStore();
    await store.write(undefined, step({}));
    const first = await store.load(undefined, 'order', 'o-1', false);
    (first!.state as { n: number }).n = 99;
    expect((await store.load(undefined, 'order', 'o-1', false))?.state).toEqual({ n: 1 });
  });

  it('keeps the history, an ignored message at the version it found, and prunes completed instances', async () => {
    const store = new MemorySagaStore();
    await store.write(undefined, step({}));
    const started = (await store.load(undefined, 'order', 'o-1', false))!;
    await store.write(
      undefined,
      step({
        id: started.id,
        expectedVersion: 1,
        status: 'completed',
        outcome: 'completed',
        messageId: 'm-2',
      }),
    );
    const completed = (await store.load(undefined, 'order', 'o-1', false))!;
    await store.recordIgnored(undefined, completed, {
      messageId: 'm-3',
      messageType: 'order.paid',
      step: 'Order.onPaid',
    });

    const view = store.find('order', 'o-1', 100);
    expect(view?.history.map((entry) => [entry.version, entry.messageId, entry.outcome])).toEqual([
      [1, 'm-1', 'started'],
      [2, 'm-2', 'completed'],
      [2, 'm-3', 'ignored'],
    ]);
    expect(view?.completedAt).toBeInstanceOf(Date);
    expect(store.find('order', 'o-1', 1)?.history).toHaveLength(1);
    expect(store.pruneCompleted(new Date(Date.now() + 1_000), 10)).toBe(1);
    expect(store.find('order', 'o-1', 100)).toBeUndefined();
  });
});
