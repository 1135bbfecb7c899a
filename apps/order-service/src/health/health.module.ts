import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { HealthController } from './health.controller';

/**
 * `GET /health/live` and `GET /health/ready`, from the messaging module's health checks. Terminus' own logger is
 * off: it would log a coloured multi-line report at ERROR on every failed call; the controller logs one line
 * per change of state instead.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), ReliableMessagingHealthModule],
  controllers: [HealthController],
})
export class HealthModule {}
