import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { TopologyService } from '../amqp/topology.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { DatabaseAvailability } from '../database/database-availability.service';
import { guardSessionErrors } from '../database/session-error-guard';
import { poolCapacityWarning } from '../flow-control/pool-capacity';
import { InboxPruner } from '../inbox/inbox-pruner.service';
import { ClaimCheckPruner } from '../claim-check/claim-check-pruner.service';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { OutboxCommitSignal } from '../outbox/outbox-commit-signal.service';
import { OutboxPruner } from '../outbox/outbox-pruner.service';
import { OutboxRelay } from '../outbox/outbox-relay.service';
import { DelayTopology } from '../retry/delay-topology.service';
import { ScheduledCommitSignal } from '../scheduling/scheduled-commit-signal.service';
import { ScheduledPromoter } from '../scheduling/scheduled-promoter.service';
import { ScheduledRepublisher } from '../scheduling/scheduled-republisher.service';
import { errorMessage } from '../util/error-text';
import { withTimeout } from '../util/with-timeout';
import { ShutdownSignal } from '../shutdown/shutdown-signal';

/** Time a shutdown step may take past the deadline before shutdown moves on without it. */
const PAST_DEADLINE_GRACE_MS = 1000;

/**
 * What the module does, in order, when the app starts and when it stops. Every step is a direct call from here;
 * no other part of the module starts or stops anything from a Nest hook.
 *
 * Startup (`onApplicationBootstrap`: every module is initialised and the consumers are discovered):
 * 1. every session of the DataSource's pool gets an error listener (a session the server ends while it is checked
 *    out would otherwise crash the process: database/session-error-guard.ts), and the outbox and scheduled
 *    messages' commit signals subscribe to the DataSource, so a commit that wrote outbox rows wakes a relay and
 *    one that scheduled a message tells the promoters when it is due;
 * 2. the consumer connection connects and declares the topology: the retry delay levels, then the exchanges and
 *    each consumer's queues, its binding to the retry deliver exchange and, when it orders by key, its
 *    key exchange, and with `scheduling.brokerDelays` the scheduled messages' republish queue. Nothing is
 *    published before the exchanges exist;
 * 3. the publisher connection connects and opens the confirm channel that retries, dead letters, the relay and
 *    MessagePublisher publish on;
 * 4. the outbox relay, the scheduled messages' promoter and the outbox pruner start where this process relays,
 *    the inbox pruner where a consumer deduplicates, the claim-check pruner where there is a claim-check store;
 * 5. the consumers subscribe, last, so a delivery that fails at once can already publish its retry, and with them
 *    the scheduled messages' republisher (where consumers are enabled).
 * When a step fails, what started stops again and the error fails the app's start.
 *
 * Reconnect: each connection runs its own part again, on its own, after every reconnection: the consumer
 * connection step 2 and then (once startup got there) step 5, the publisher connection step 3. The relay waits
 * while the publisher connection is down or blocked.
 *
 * Shutdown (SIGTERM), one sequence; from step 2 on, all within `shutdownTimeoutMs` (keep it below Kubernetes'
 * terminationGracePeriodSeconds):
 * 1. the shutdown signal aborts (shutdown/shutdown-signal.ts, begun here alone): readiness goes down, ordered
 *    consumers start nothing more and stop waiting between in-place retries (their delivery is left for the
 *    channel's close to return to the head of its queue). This runs from Nest's first shutdown hook, while other
 *    modules' hooks still run;
 * 2. every unordered consumer cancels its subscription, so the broker sends nothing more, and deliveries held
 *    for a database outage go back to their queues as fresh copies at once; an ordered consumer keeps its
 *    subscription and starts nothing more, so that the next replica gets its queue only when its channel closes
 *    (each consumer's intake: intake/consumer-intake.ts);
 * 3. in-flight handlers finish and are acknowledged, up to the deadline; at the deadline the handlers still
 *    running have their `ctx.signal` aborted, and their deliveries go back to the broker as the consumer
 *    channels close (the log says how many). The scheduled messages' republisher cancels its subscription and
 *    finishes the publishes in hand within the same deadline;
 * 4. the database probe stops;
 * 5. the scheduled messages' promoter stops after its statement in progress, then the outbox relay finishes
 *    its batch and its confirms;
 * 6. the outbox, inbox and claim-check pruners stop after the statement in progress;
 * 7. the commit signals unsubscribe from the DataSource, after their last NOTIFYs;
 * 8. both connections close, and with them the publisher channel; a publish still waiting for a blocked
 *    connection to be unblocked fails;
 * 9. the module's metrics leave the registry (scrapes during the drain still saw them).
 * A step still running past the deadline is logged and left behind, so the connections always close.
 */
@Injectable()
export class MessagingLifecycle
  implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown
{
  private readonly logger = new Logger('ReliableMessaging');
  private stopped?: Promise<void>;
  /** Set once startup reaches the consumers: from then on every consumer connection subscribes them. */
  private consuming = false;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly consumerConnection: ConsumerConnection,
    private readonly publisherConnection: PublisherConnection,
    private readonly delayTopology: DelayTopology,
    private readonly topology: TopologyService,
    private readonly confirms: ConfirmPublisher,
    private readonly registry: ConsumerRegistry,
    private readonly relay: OutboxRelay,
    private readonly commitSignal: OutboxCommitSignal,
    private readonly outboxPruner: OutboxPruner,
    private readonly inboxPruner: InboxPruner,
    private readonly claimCheckPruner: ClaimCheckPruner,
    private readonly shutdown: ShutdownSignal,
    private readonly database: DatabaseAvailability,
    private readonly metrics: MessagingMetrics,
    private readonly promoter: ScheduledPromoter,
    private readonly scheduledCommits: ScheduledCommitSignal,
    private readonly republisher: ScheduledRepublisher,
  ) {}

  /** True from the moment shutdown begins; readiness reports unhealthy from then on. */
  get isShuttingDown(): boolean {
    return this.shutdown.hasBegun;
  }

  async onApplicationBootstrap(): Promise<void> {
    const warning =
      this.options.dataSource && poolCapacityWarning(this.registry.consumers, this.options.dataSource);
    if (warning) this.logger.warn(warning);
    if (this.options.dataSource) {
      guardSessionErrors(this.options.dataSource, (error) =>
        this.logger.warn(`a database session in use was closed: ${errorMessage(error)}`),
      );
    }
    try {
      this.commitSignal.start();
      this.scheduledCommits.start();
      await this.consumerConnection.start((model) => this.setUpConsumerConnection(model));
      await this.publisherConnection.start((model) => this.confirms.attach(model));
      if (this.relay.enabled) {
        this.relay.start();
        this.promoter.start();
        this.outboxPruner.start();
      }
      if (this.inboxPruner.enabled) this.inboxPruner.start();
      if (this.claimCheckPruner.enabled) this.claimCheckPruner.start();
      this.consuming = true;
      const model = this.consumerConnection.model;
      if (model) await this.startConsuming(model);
    } catch (error) {
      await this.undoStartup();
      throw error;
    }
  }

  /** Shutdown's step 1, from Nest's first shutdown hook. */
  onModuleDestroy(): void {
    this.beginShutdown();
  }

  /** Shutdown's steps 2 to 9; a second call waits for the first. */
  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.stopped ??= this.stop(signal);
    await this.stopped;
  }

  /** Startup's step 2, and step 5 once startup got there: run on every consumer connection. */
  private async setUpConsumerConnection(model: ChannelModel): Promise<void> {
    const consumers = this.registry.consumers;
    await this.delayTopology.declareLevels(model, consumers);
    await this.topology.declare(model, consumers);
    if (this.republisher.enabled) await this.republisher.declare(model);
    if (this.consuming) await this.startConsuming(model);
  }

  /** Startup's step 5: the consumers, and the scheduled messages' republisher where this process consumes. */
  private async startConsuming(model: ChannelModel): Promise<void> {
    await this.registry.startAll(model);
    if (this.republisher.enabled && this.options.consumersEnabled) await this.republisher.start(model);
  }

  private beginShutdown(): void {
    this.shutdown.begin();
  }

  private async stop(signal?: string): Promise<void> {
    this.beginShutdown();
    const started = Date.now();
    const deadline = started + this.options.shutdownTimeoutMs;
    this.logger.log(
      `shutting down${signal ? ` on ${signal}` : ''}: draining consumers (deadline ${this.options.shutdownTimeoutMs} ms)`,
    );
    const [{ completed, abandoned }] = await Promise.all([
      this.registry.stopAll(deadline),
      this.republisher.enabled
        ? this.step('scheduled messages republisher', deadline, () => this.republisher.stop(deadline))
        : undefined,
    ]);
    this.database.stop();
    if (abandoned > 0) {
      this.logger.warn(
        `${abandoned} in-flight message(s) not finished by the deadline go back to the broker for redelivery`,
      );
    }
    if (this.relay.enabled) {
      await this.step('scheduled messages promoter', deadline, () => this.promoter.stop());
      await this.step('outbox relay', deadline, () => this.relay.stop(deadline));
    }
    await this.step('pruners', deadline, () =>
      Promise.all([this.outboxPruner.stop(), this.inboxPruner.stop(), this.claimCheckPruner.stop()]),
    );
    await this.step('commit signals', deadline, () =>
      Promise.all([this.commitSignal.stop(), this.scheduledCommits.stop()]),
    );
    await this.step('closing the broker connections', deadline, () => this.closeConnections());
    this.metrics.unregister();
    this.logger.log(
      `messaging stopped in ${Date.now() - started} ms: ${completed} in-flight message(s) finished, ${abandoned} returned to the broker`,
    );
  }

  /** After a failed start: stops whatever startup had started, so nothing keeps running or holds the process. */
  private async undoStartup(): Promise<void> {
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    if (this.republisher.enabled) {
      await this.step('scheduled messages republisher', deadline, () => this.republisher.stop(deadline));
    }
    if (this.relay.enabled) {
      await this.step('scheduled messages promoter', deadline, () => this.promoter.stop());
      await this.step('outbox relay', deadline, () => this.relay.stop(deadline));
    }
    await this.step('pruners', deadline, () =>
      Promise.all([this.outboxPruner.stop(), this.inboxPruner.stop(), this.claimCheckPruner.stop()]),
    );
    await this.step('commit signals', deadline, () =>
      Promise.all([this.commitSignal.stop(), this.scheduledCommits.stop()]),
    );
    await this.closeConnections();
  }

  /** Runs one step of shutdown; past the deadline (and a grace second) it is logged and shutdown moves on. */
  private async step(name: string, deadline: number, run: () => Promise<unknown>): Promise<void> {
    const remaining = Math.max(0, deadline - Date.now()) + PAST_DEADLINE_GRACE_MS;
    try {
      await withTimeout(run(), remaining, 'the step');
    } catch (error) {
      this.logger.error(`shutdown step '${name}' failed: ${errorMessage(error)}`);
    }
  }

  private async closeConnections(): Promise<void> {
    await Promise.all([this.consumerConnection.close(), this.publisherConnection.close()]);
  }
}
