import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { TopologyService } from '../amqp/topology.service';
import type { ConsumerPlan } from './consumer-plan';
import { orderedIntake } from '../intake/ordered-intake';
import { unorderedIntake } from '../intake/unordered-intake';
import { ConsumerRunner } from './consumer-runner';
import type { MessageHandler } from '../pipeline/message-middleware';
import { OrderingTopology } from '../ordering/ordering-topology.service';
import { LaneTopology } from '../lanes/lane-topology.service';
import type { DelayTopology } from '../retry/delay-topology.service';
import { RetryPolicy } from '../retry/retry-policy';
import { resolveOptions, type ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { CapturingLogger } from '../../../../test/support/messaging-app';
import { TestBroker } from '../../../../test/support/test-broker';
import { waitFor } from '../../../../test/support/wait-for';

/** A point the code under test reaches and waits at until the spec opens it. */
class Latch {
  readonly reached: Promise<void>;
  private readonly opened: Promise<void>;
  private markReached!: () => void;
  private markOpened!: () => void;

  constructor() {
    this.reached = new Promise((resolve) => (this.markReached = resolve));
    this.opened = new Promise((resolve) => (this.markOpened = resolve));
  }

  /** Called by the code under test: says it got here, then waits for {@link open}. */
  pass(): Promise<void> {
    this.markReached();
    return this.opened;
  }

  open(): void {
    this.markOpened();
  }
}

/** Declares for real, then holds a resubscription at `hold`, when the spec sets one. */
class HeldTopology extends TopologyService {
  hold?: Latch;

  override async declareOne(model: ChannelModel, consumer: ConsumerPlan): Promise<void> {
    await super.declareOne(model, consumer);
    await this.hold?.pass();
  }
}

/** `model`, with the opening of a channel or its consume-ok (after the broker registered the consumer) held at `gate`. */
function holdAt(model: ChannelModel, step: 'createChannel' | 'consume', gate: Latch): ChannelModel {
  const held = Object.create(model) as ChannelModel;
  held.createChannel = async () => {
    if (step === 'createChannel') await gate.pass();
    const channel: Channel = await model.createChannel();
    if (step === 'consume') {
      const consume = channel.consume.bind(channel);
      channel.consume = async (...args) => {
        const reply = await consume(...args);
        await gate.pass();
        return reply;
      };
    }
    return channel;
  };
  return held;
}

describe('a consumer stopped while it (re)subscribes', () => {
  const logger = new CapturingLogger();
  let broker: TestBroker;
  let options: ResolvedMessagingOptions;
  let connection: ConsumerConnection;
  let topology: HeldTopology;

  const consumers = async (queue: string) =>
    (await (await broker.openChannel()).checkQueue(queue)).consumerCount;

  /** A runner on a classic queue, declared here; its handler waits at `handling` when given one. */
  const runnerOn = async (
    scenario: string,
    handling?: Latch,
    own: Partial<ConsumerPlan> = {},
    handler: MessageHandler = async () => handling?.pass(),
  ) => {
    const queue = broker.name(scenario);
    const definition: ConsumerPlan = {
      name: `StopRace.${scenario}`,
      instance: {},
      methodName: scenario,
      contextType: 'rmq',
      queue,
      deadLetterQueue: `${queue}.dlq`,
      exchange: options.exchange,
      bindings: [],
      queueType: 'classic',
      queueArguments: topology.queueArguments(queue, 'classic'),
      extraQueueArguments: {},
      concurrency: 1,
      prefetch: 1,
      deadline: { deadlineMs: options.defaultDeadlineMs, limitMs: options.consumerTimeoutMs },
      messageTypes: [],
      acceptedMajorVersions: [1],
      maxPayloadBytes: options.maxPayloadBytes,
      jsonLimits: options.jsonLimits,
      accept: ['envelope'],
      retry: new RetryPolicy(options.retry),
      reply: false,
      ordering: { mode: 'none' },
      intake: unorderedIntake,
      ...own,
    };
    broker.track(definition.deadLetterQueue);
    await topology.declareOne(connection.model!, definition);
    const runner = new ConsumerRunner(definition, handler, connection, topology);
    return { queue, runner };
  };

  beforeAll(async () => {
    Logger.overrideLogger(logger);
    broker = await TestBroker.connect();
    options = resolveOptions({
      urls: broker.url,
      exchange: broker.name('events'),
      connectionName: `${broker.prefix}.runner`,
    });
    broker.track(options.deadLetterExchange);
    connection = new ConsumerConnection(options);
    // The spec declares no retry delay levels, so its queues skip the binding to their deliver exchange.
    const noRetryBinding = { bindConsumer: async () => undefined } as unknown as DelayTopology;
    topology = new HeldTopology(options, noRetryBinding, new OrderingTopology(), new LaneTopology());
    await connection.start(async () => undefined);
  });

  afterAll(async () => {
    await connection?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('does not resubscribe after a server cancel when stop() begins while the queue is declared again', async () => {
    const handling = new Latch();
    const { queue, runner } = await runnerOn('recovering', handling);
    await runner.start(connection.model!);
    await broker.publishRaw({ queue }, 'in flight during the drain');
    await handling.reached;

    const declaring = new Latch();
    topology.hold = declaring;
    await (await broker.openChannel()).deleteQueue(queue);
    await declaring.reached;
    const stopped = runner.stop(Date.now() + 30_000);
    topology.hold = undefined;
    declaring.open();
    await waitFor('the resubscription after the cancel to end', () =>
      logger.lines.some((line) => line.message.includes('resubscrib') && line.message.endsWith(queue)),
    );
    const duringDrain = { consumers: await consumers(queue), consuming: runner.status.consuming };
    handling.open();
    const drained = await stopped;

    expect(duringDrain).toEqual({ consumers: 0, consuming: false });
    expect(drained).toEqual({ completed: 1, abandoned: 0 });
    expect(await consumers(queue)).toBe(0);
  });

  it.each([
    ['opening its channel', 'createChannel'],
    ["awaiting the broker's consume-ok", 'consume'],
  ] as const)(
    'leaves no subscription when stop() begins while start() on a connection is %s',
    async (_state, step) => {
      const { queue, runner } = await runnerOn(`starting-${step}`);
      const gate = new Latch();

      const started = runner.start(holdAt(connection.model!, step, gate));
      await gate.reached;
      const stopped = runner.stop(Date.now() + 30_000);
      gate.open();
      await started;

      expect(await stopped).toEqual({ completed: 0, abandoned: 0 });
      expect({ consumers: await consumers(queue), consuming: runner.status.consuming }).toEqual({
        consumers: 0,
        consuming: false,
      });
    },
  );

  it('returns a delivery an ordered runner gives back, and the ones fetched after it, in their order', async () => {
    const started: string[] = [];
    const gaveBack = new Set<string>();
    const ordered = { mode: 'queue' } as const;
    const { queue, runner } = await runnerOn(
      'given-back',
      undefined,
      { ordering: ordered, intake: orderedIntake, prefetch: 3 },
      async (delivery) => {
        const body = delivery.raw.content.toString();
        started.push(body);
        if (body === 'first' && !gaveBack.has(body)) {
          // Wait until the two behind it are fetched, then give it back (as a hold past its limit does).
          await waitFor('three deliveries fetched', async () => (await broker.queueDepth(queue)) === 0);
          gaveBack.add(body);
          delivery.giveBack();
          return;
        }
        delivery.ack();
      },
    );
    for (const body of ['first', 'second', 'third']) await broker.publishRaw({ queue }, body);

    await runner.start(connection.model!);
    await waitFor('all three handled', () => started.filter((body) => body !== 'first').length === 2);
    await runner.stop(Date.now() + 5_000);

    // Requeued instead, 'first' would have come back after the two already fetched behind it.
    expect(started).toEqual(['first', 'first', 'second', 'third']);
  });
});
