import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { AmqpConnection } from '../amqp/amqp-connection.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';

/** A step of shutdown that runs after the consumers have drained and before the connection closes. */
export type ShutdownStep = { name: string; run: (deadline: number) => Promise<void> };

/**
 * Starts messaging once the app is bootstrapped, and stops it in one sequence: readiness down, consumers
 * cancelled, in-flight handlers awaited up to the deadline, registered steps (the outbox relay), then the
 * connection closed. Whatever is unacknowledged at the deadline goes back to the broker.
 */
@Injectable()
export class MessagingLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly steps: ShutdownStep[] = [];
  private shuttingDown = false;
  private stopped?: Promise<void>;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly connection: AmqpConnection,
    private readonly registry: ConsumerRegistry,
  ) {}

  /** True from the moment shutdown begins; readiness reports unhealthy from then on. */
  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Adds a step run during shutdown after consumers drain, before the connection closes. */
  addShutdownStep(step: ShutdownStep): void {
    this.steps.push(step);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.connection.onConnect((model) => this.registry.declareTopology(model));
    this.connection.onConnect((model) => this.registry.startAll(model));
    await this.connection.start();
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.stopped ??= this.stop(signal);
    await this.stopped;
  }

  private async stop(signal?: string): Promise<void> {
    this.shuttingDown = true;
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    this.logger.log(
      `shutting down${signal ? ` on ${signal}` : ''}: draining consumers (deadline ${this.options.shutdownTimeoutMs} ms)`,
    );
    const { completed, abandoned } = await this.registry.stopAll(deadline);
    if (abandoned > 0) {
      this.logger.warn(
        `${abandoned} in-flight message(s) not finished by the deadline go back to the broker for redelivery`,
      );
    }
    for (const step of this.steps) {
      try {
        await step.run(deadline);
      } catch (error) {
        this.logger.error(
          `shutdown step '${step.name}' failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    await this.connection.close();
    this.logger.log(`messaging stopped: ${completed} in-flight message(s) finished during shutdown`);
  }
}
