import { Inject, Injectable } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { TopologyService } from '../amqp/topology.service';
import { ShutdownSignal } from '../shutdown/shutdown-signal';
import { ReliabilityPipeline } from '../pipeline/reliability-pipeline';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { QueueAgeSample } from '../metrics/queue-age';
import type { ConsumerPlan } from './consumer-plan';
import { ConsumerRunner, type ConsumerStatus, type DrainResult } from './consumer-runner';

/** Holds every consumer of the app, declares their topology and (re)starts them on each connection. */
@Injectable()
export class ConsumerRegistry {
  private runners: ConsumerRunner[] = [];
  private definitions: ConsumerPlan[] = [];
  private discovered: ConsumerPlan[] = [];

  constructor(
    private readonly connection: ConsumerConnection,
    private readonly topology: TopologyService,
    private readonly pipeline: ReliabilityPipeline,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly shutdown: ShutdownSignal,
  ) {}

  /** Registers the discovered consumers; their pipelines are built here, once. */
  register(definitions: ConsumerPlan[], discovered: ConsumerPlan[] = definitions): void {
    this.definitions = definitions;
    this.discovered = discovered;
    this.runners = definitions.map(
      (definition) =>
        new ConsumerRunner(
          definition,
          this.pipeline.build(definition),
          this.connection,
          this.topology,
          this.options.consumerTimeoutMs,
          this.shutdown.signal,
        ),
    );
  }

  get consumers(): readonly ConsumerPlan[] {
    return this.definitions;
  }

  /** Every `@Consume()` handler of the app, also when `consumersEnabled` is false (the dead-letter tools read their queues). */
  get discoveredConsumers(): readonly ConsumerPlan[] {
    return this.discovered;
  }

  get statuses(): ConsumerStatus[] {
    return this.runners.map((runner) => runner.status);
  }

  /** What the consumer of `queue` knows of its messages' ages (metrics/queue-age.ts); empty when none reads it. */
  ageSample(queue: string): QueueAgeSample {
    return this.runners.find((runner) => runner.definition.queue === queue)?.ageSample ?? {};
  }

  async startAll(model: ChannelModel): Promise<void> {
    for (const runner of this.runners) await runner.start(model);
  }

  /** Stops every consumer at once and drains them against one deadline. */
  async stopAll(deadline: number): Promise<DrainResult> {
    const results = await Promise.all(this.runners.map((runner) => runner.stop(deadline)));
    return results.reduce(
      (sum, r) => ({ completed: sum.completed + r.completed, abandoned: sum.abandoned + r.abandoned }),
      { completed: 0, abandoned: 0 },
    );
  }
}
