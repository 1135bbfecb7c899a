import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ChannelModel } from 'amqplib';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { TopologyService } from '../amqp/topology.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { DatabaseAvailability } from '../database/database-availability.service';
import { DelayTopology } from '../retry/delay-topology.service';
import { poolCapacityWarning } from '../flow-control/pool-capacity';
import { errorMessage } from '../util/error-text';
import { withTimeout } from '../util/with-timeout';

/** A step of shutdown that runs after the consumers have drained and before the connections close. */
export type ShutdownStep = { name: string; run: (deadline: number) => Promise<void> };

/** Time a shutdown step or closing the connections may take past the deadline before shutdown moves on. */
const PAST_DEADLINE_GRACE_MS = 1000;

/**
 * Starts messaging once the app is bootstrapped (see `onApplicationBootstrap` for the order), and stops it in
 * one sequence, all within `shutdownTimeoutMs` (keep it below Kubernetes' terminationGracePeriodSeconds):
 *
 * 1. readiness goes down (from Nest's first shutdown hook, before anything stops);
 * 2. every consumer cancels its subscription, so the broker sends nothing more, and deliveries held for a
 *    database outage go back to their queues as fresh copies at once;
 * 3. in-flight handlers finish and are acknowledged, up to the deadline; at the deadline the handlers still
 *    running have their `ctx.signal` aborted, and their deliveries go back to the broker when the consumer
 *    channels close (the log says how many);
 * 4. the database probe stops;
 * 5. registered steps run (the outbox relay finishes its batch and its confirms);
 * 6. both connections close, and with them the publisher channel; a publish still waiting for a blocked
 *    connection to be unblocked fails.
 */
@Injectable()
export class MessagingLifecycle
  implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown
{
  private readonly logger = new Logger('ReliableMessaging');
  private readonly steps: ShutdownStep[] = [];
  private shuttingDown = false;
  private stopped?: Promise<void>;
  /** Set once startup reaches the consumers: from then on every consumer connection subscribes them. */
  private consuming = false;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly consumerConnection: ConsumerConnection,
    private readonly publisherConnection: PublisherConnection,
    private readonly confirms: ConfirmPublisher,
    private readonly delayTopology: DelayTopology,
    private readonly topology: TopologyService,
    private readonly registry: ConsumerRegistry,
    private readonly database: DatabaseAvailability,
  ) {}

  /** True from the moment shutdown begins; readiness reports unhealthy from then on. */
  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Adds a step run during shutdown after consumers drain, before the connections close. */
  addShutdownStep(step: ShutdownStep): void {
    this.steps.push(step);
  }

  /**
   * Startup, in order. Each connection runs its part again after it reconnects, on its own; the outbox relay
   * starts once the consumer connection has declared the topology, and pauses while the publisher is not ready.
   */
  async onApplicationBootstrap(): Promise<void> {
    const warning =
      this.options.dataSource && poolCapacityWarning(this.registry.consumers, this.options.dataSource);
    if (warning) this.logger.warn(warning);
    try {
      // 1. The consumer connection declares the topology first, so nothing is published to an exchange that
      //    does not exist yet.
      await this.consumerConnection.start((model) => this.setUpConsuming(model));
      // 2. The publisher connection opens the confirm channel that retries, dead letters and the relay use.
      await this.publisherConnection.start((model) => this.confirms.attach(model));
      // 3. The consumers subscribe last, so a delivery that fails at once can already schedule its retry.
      this.consuming = true;
      const model = this.consumerConnection.model;
      if (model) await this.registry.startAll(model);
    } catch (error) {
      await this.closeConnections();
      throw error;
    }
  }

  /** Nest's first shutdown hook: readiness fails from here, while other modules' hooks still run. */
  onModuleDestroy(): void {
    this.shuttingDown = true;
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.stopped ??= this.stop(signal);
    await this.stopped;
  }

  private async stop(signal?: string): Promise<void> {
    this.shuttingDown = true;
    const started = Date.now();
    const deadline = started + this.options.shutdownTimeoutMs;
    this.logger.log(
      `shutting down${signal ? ` on ${signal}` : ''}: draining consumers (deadline ${this.options.shutdownTimeoutMs} ms)`,
    );
    const { completed, abandoned } = await this.registry.stopAll(deadline);
    this.database.stop();
    if (abandoned > 0) {
      this.logger.warn(
        `${abandoned} in-flight message(s) not finished by the deadline go back to the broker for redelivery`,
      );
    }
    for (const step of this.steps) {
      try {
        await withTimeout(step.run(deadline), this.remaining(deadline), `shutdown step '${step.name}'`);
      } catch (error) {
        this.logger.error(`shutdown step '${step.name}' failed: ${errorMessage(error)}`);
      }
    }
    await withTimeout(
      this.closeConnections(),
      this.remaining(deadline),
      'closing the broker connections',
    ).catch((error: unknown) => this.logger.error(errorMessage(error)));
    this.logger.log(
      `messaging stopped in ${Date.now() - started} ms: ${completed} in-flight message(s) finished, ${abandoned} returned to the broker`,
    );
  }

  /**
   * Runs on every consumer connection: the delay levels, then the consumers' topology (their queues, their
   * retry binding, their ordering exchange), then the consumers.
   */
  private async setUpConsuming(model: ChannelModel): Promise<void> {
    const consumers = this.registry.consumers;
    await this.delayTopology.declareLevels(model, consumers);
    await this.topology.declare(model, consumers);
    if (this.consuming) await this.registry.startAll(model);
  }

  private async closeConnections(): Promise<void> {
    await Promise.all([this.consumerConnection.close(), this.publisherConnection.close()]);
  }

  private remaining(deadline: number): number {
    return Math.max(0, deadline - Date.now()) + PAST_DEADLINE_GRACE_MS;
  }
}
