import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import type { ConnectionSetup } from '../amqp/amqp-connection.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { MessagingLifecycle } from './messaging-lifecycle';
import { ShutdownSignal } from '../shutdown/shutdown-signal';

const SHUTDOWN_TIMEOUT_MS = 5_000;

/** Keeps the errors the lifecycle logs, and prints nothing. */
class ErrorLog implements LoggerService {
  readonly errors: string[] = [];
  log(): void {}
  warn(): void {}
  error(message: unknown): void {
    this.errors.push(String(message));
  }
}

/** What the fakes were asked to do, in order. */
type Calls = string[];

/** A connection that connects at once: `start` runs the setup on a fresh model, `reconnect` runs it again. */
class FakeConnection {
  model?: ChannelModel;
  private setup?: ConnectionSetup;

  constructor(
    private readonly name: string,
    private readonly calls: Calls,
  ) {}

  async start(setup: ConnectionSetup): Promise<void> {
    this.calls.push(`${this.name} connects`);
    this.setup = setup;
    await this.reconnect();
  }

  async reconnect(): Promise<void> {
    this.model = {} as ChannelModel;
    await this.setup?.(this.model);
  }

  async close(): Promise<void> {
    this.calls.push(`${this.name} closes`);
  }
}

interface Setting {
  relays?: boolean;
  dedups?: boolean;
  /** Makes the step with this name fail (startup) or never end (shutdown). */
  failing?: string;
  hanging?: string;
  shutdownTimeoutMs?: number;
}

/** A lifecycle over fakes that record each call; `deadlines` keeps the deadline each shutdown step was given. */
function lifecycleWith({
  relays = true,
  dedups = true,
  failing,
  hanging,
  shutdownTimeoutMs = SHUTDOWN_TIMEOUT_MS,
}: Setting = {}) {
  const calls: Calls = [];
  const deadlines: Record<string, number> = {};
  const step =
    (name: string) =>
    async (...args: unknown[]): Promise<void> => {
      calls.push(name);
      if (typeof args[0] === 'number') deadlines[name] = args[0];
      if (name === failing) throw new Error(`${name} failed`);
      if (name === hanging) await new Promise(() => undefined);
    };
  const consumerConnection = new FakeConnection('consumer connection', calls);
  const publisherConnection = new FakeConnection('publisher connection', calls);
  const options = { shutdownTimeoutMs } as ResolvedMessagingOptions;
  const shutdown = new ShutdownSignal();
  shutdown.signal.addEventListener('abort', () => calls.push('shutdown begins'));
  const lifecycle = new MessagingLifecycle(
    options,
    consumerConnection as never,
    publisherConnection as never,
    { declareLevels: step('declare delay levels') } as never,
    { declare: step('declare consumer topology') } as never,
    { attach: step('open confirm channel') } as never,
    {
      consumers: [],
      startAll: step('subscribe consumers'),
      stopAll: async (deadline: number) => {
        await step('drain consumers')(deadline);
        return { completed: 0, abandoned: 0 };
      },
    } as never,
    { enabled: relays, start: step('start relay'), stop: step('stop relay') } as never,
    { start: step('start commit signal'), stop: step('stop commit signal') } as never,
    { start: step('start outbox pruner'), stop: step('stop outbox pruner') } as never,
    { enabled: dedups, start: step('start inbox pruner'), stop: step('stop inbox pruner') } as never,
    { enabled: false, start: () => undefined, stop: async () => undefined } as never,
    shutdown,
    { stop: step('stop database probe') } as never,
    { unregister: step('unregister metrics') } as never,
    { start: step('start promoter'), stop: step('stop promoter') } as never,
    { start: step('start scheduled commit signal'), stop: step('stop scheduled commit signal') } as never,
    { enabled: false } as never,
  );
  return { lifecycle, calls, deadlines, consumerConnection, publisherConnection };
}

describe('MessagingLifecycle', () => {
  const log = new ErrorLog();
  beforeAll(() => {
    Logger.overrideLogger(log);
  });
  afterAll(() => {
    Logger.overrideLogger(new Logger());
  });

  it.each([
    [
      'a process that relays and deduplicates',
      { relays: true, dedups: true },
      ['start relay', 'start promoter', 'start outbox pruner', 'start inbox pruner'],
    ],
    ['a process without relay or inbox', { relays: false, dedups: false }, []],
  ])(
    'starts %s in order: topology, publisher, then relay and pruners, consumers last',
    async (_, setting, middle) => {
      const { lifecycle, calls } = lifecycleWith(setting);

      await lifecycle.onApplicationBootstrap();

      expect(calls).toEqual([
        'start commit signal',
        'start scheduled commit signal',
        'consumer connection connects',
        'declare delay levels',
        'declare consumer topology',
        'publisher connection connects',
        'open confirm channel',
        ...middle,
        'subscribe consumers',
      ]);
    },
  );

  it('runs each connection its own part again after a reconnect', async () => {
    const { lifecycle, calls, consumerConnection, publisherConnection } = lifecycleWith();
    await lifecycle.onApplicationBootstrap();
    calls.length = 0;

    await consumerConnection.reconnect();
    await publisherConnection.reconnect();

    expect(calls).toEqual([
      'declare delay levels',
      'declare consumer topology',
      'subscribe consumers',
      'open confirm channel',
    ]);
  });

  it('stops what it started and fails the start when a step fails', async () => {
    const { lifecycle, calls } = lifecycleWith({ failing: 'subscribe consumers' });

    await expect(lifecycle.onApplicationBootstrap()).rejects.toThrow('subscribe consumers failed');

    expect(calls.slice(calls.indexOf('subscribe consumers'))).toEqual([
      'subscribe consumers',
      'stop promoter',
      'stop relay',
      'stop outbox pruner',
      'stop inbox pruner',
      'stop commit signal',
      'stop scheduled commit signal',
      'consumer connection closes',
      'publisher connection closes',
    ]);
  });

  it('shuts down in the listed order: readiness first, consumers drained before the relay and the connections', async () => {
    const { lifecycle, calls } = lifecycleWith();
    await lifecycle.onApplicationBootstrap();
    calls.length = 0;

    lifecycle.onModuleDestroy();
    const readyAtFirstHook = !lifecycle.isShuttingDown;
    await lifecycle.beforeApplicationShutdown('SIGTERM');

    expect(readyAtFirstHook).toBe(false);
    expect(calls).toEqual([
      'shutdown begins',
      'drain consumers',
      'stop database probe',
      'stop promoter',
      'stop relay',
      'stop outbox pruner',
      'stop inbox pruner',
      'stop commit signal',
      'stop scheduled commit signal',
      'consumer connection closes',
      'publisher connection closes',
      'unregister metrics',
    ]);
  });

  it('gives the drain and the relay one deadline, shutdownTimeoutMs from the start of the drain', async () => {
    const { lifecycle, deadlines } = lifecycleWith();
    await lifecycle.onApplicationBootstrap();

    const before = Date.now();
    await lifecycle.beforeApplicationShutdown();
    const after = Date.now();

    expect(deadlines['stop relay']).toBe(deadlines['drain consumers']);
    expect(deadlines['drain consumers']).toBeGreaterThanOrEqual(before + SHUTDOWN_TIMEOUT_MS);
    expect(deadlines['drain consumers']).toBeLessThanOrEqual(after + SHUTDOWN_TIMEOUT_MS);
  });

  it('leaves a step behind that outlasts the deadline by a second, and still closes the connections', async () => {
    const { lifecycle, calls } = lifecycleWith({ hanging: 'stop relay', shutdownTimeoutMs: 50 });
    await lifecycle.onApplicationBootstrap();
    log.errors.length = 0;

    const started = Date.now();
    await lifecycle.beforeApplicationShutdown();

    expect(Date.now() - started).toBeLessThan(3_000);
    expect(log.errors).toEqual([
      expect.stringMatching(/^shutdown step 'outbox relay' failed: the step did not answer within \d+ ms$/),
    ]);
    expect(calls.slice(-3)).toEqual([
      'consumer connection closes',
      'publisher connection closes',
      'unregister metrics',
    ]);
  });

  it('runs shutdown once when its hook is called again while it runs', async () => {
    const { lifecycle, calls } = lifecycleWith();
    await lifecycle.onApplicationBootstrap();
    calls.length = 0;

    await Promise.all([lifecycle.beforeApplicationShutdown(), lifecycle.beforeApplicationShutdown()]);

    expect(calls.filter((call) => call === 'drain consumers')).toHaveLength(1);
    expect(calls.filter((call) => call.endsWith('closes'))).toHaveLength(2);
  });
});
