import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BrokerHealthIndicator } from './broker.health';
import { ConsumersHealthIndicator } from './consumers.health';
import { DatabaseHealthIndicator } from './database.health';
import { DeadLetterHealthIndicator } from './dead-letter.health';
import { HandlersHealthIndicator } from './handlers.health';
import { MessagingHealth } from './messaging-health.service';
import { OutboxHealthIndicator } from './outbox.health';
import { ShutdownHealthIndicator } from './shutdown.health';

/**
 * The module's Terminus health indicators, grouped as `MessagingHealth`. Import it (beside
 * `ReliableMessagingModule.forRoot()`, which it builds on) in the module of your health controller; it is the
 * only part of the package that loads `@nestjs/terminus`.
 *
 * @example
 * ＠Module({ imports: [TerminusModule, ReliableMessagingHealthModule], controllers: [HealthController] })
 * export class HealthModule {}
 */
@Module({
  imports: [TerminusModule],
  providers: [
    BrokerHealthIndicator,
    ConsumersHealthIndicator,
    DatabaseHealthIndicator,
    DeadLetterHealthIndicator,
    HandlersHealthIndicator,
    OutboxHealthIndicator,
    ShutdownHealthIndicator,
    MessagingHealth,
  ],
  exports: [MessagingHealth],
})
export class ReliableMessagingHealthModule {}
