import { Injectable } from '@nestjs/common';
import type { HealthIndicatorFunction } from '@nestjs/terminus';
import { BrokerHealthIndicator } from './broker.health';
import { ConsumersHealthIndicator } from './consumers.health';
import { DatabaseHealthIndicator } from './database.health';
import { DeadLetterHealthIndicator } from './dead-letter.health';
import { HandlersHealthIndicator } from './handlers.health';
import { OutboxHealthIndicator } from './outbox.health';
import { ShutdownHealthIndicator } from './shutdown.health';

/**
 * The module's health checks, grouped for the two Kubernetes probes. Pass them to Terminus'
 * `HealthCheckService.check()` in your health controller.
 *
 * @example
 * ＠Get('ready') ＠HealthCheck()
 * ready() { return this.health.check(this.messagingHealth.readiness()); }
 */
@Injectable()
export class MessagingHealth {
  constructor(
    private readonly shutdown: ShutdownHealthIndicator,
    private readonly broker: BrokerHealthIndicator,
    private readonly consumers: ConsumersHealthIndicator,
    private readonly database: DatabaseHealthIndicator,
    private readonly deadLetters: DeadLetterHealthIndicator,
    private readonly handlers: HandlersHealthIndicator,
    private readonly outbox: OutboxHealthIndicator,
  ) {}

  /**
   * Liveness: only what a restart can fix (handlers stuck past their deadline). It never checks the broker or
   * the database, so their outage never makes Kubernetes restart every pod, and it stays up while shutting down.
   */
  liveness(): HealthIndicatorFunction[] {
    return [() => this.handlers.isHealthy()];
  }

  /**
   * Readiness: whether the pod can serve requests. Down from the start of shutdown and while the database does
   * not answer. A broker connection that is down or a consumer that is not subscribed makes it down only with
   * `readinessRequiresBroker` (the default without a `dataSource`); with the outbox they show as degraded, since
   * requests then need only PostgreSQL. Degraded (still ready) too while the broker blocks a connection, dead
   * letters wait, or the outbox backlog is older than a minute.
   */
  readiness(): HealthIndicatorFunction[] {
    const checks: HealthIndicatorFunction[] = [
      () => this.shutdown.isHealthy(),
      () => this.broker.isHealthy(),
      () => this.consumers.isHealthy(),
    ];
    if (this.database.configured) checks.push(() => this.database.isHealthy());
    if (this.outbox.configured) checks.push(() => this.outbox.isHealthy());
    checks.push(() => this.deadLetters.isHealthy());
    return checks;
  }
}
