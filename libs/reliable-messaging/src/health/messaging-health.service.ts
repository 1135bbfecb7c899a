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
   * Readiness: down from the start of shutdown, while the broker is disconnected, while a consumer is not
   * subscribed, or while the database does not answer; degraded (still ready) while publishing is blocked,
   * dead letters wait, or the outbox backlog is older than a minute.
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
