import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { MessagingLifecycle } from '../lifecycle/messaging-lifecycle';

/** Down from the moment shutdown begins, so readiness fails before consumers stop and the connection closes. */
@Injectable()
export class ShutdownHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly lifecycle: MessagingLifecycle,
  ) {}

  isHealthy<const Key extends string = 'shutdown'>(key: Key = 'shutdown' as Key): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    return this.lifecycle.isShuttingDown ? indicator.down({ message: 'shutting down' }) : indicator.up();
  }
}
