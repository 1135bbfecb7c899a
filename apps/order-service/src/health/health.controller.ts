import { Controller, Get, Logger, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { MessagingHealth } from 'nestjs-reliable-messaging/health';
import { ProbeLog } from './probe-log';

/**
 * Kubernetes probes. Liveness fails only for what a restart fixes, and stays up while the app shuts down;
 * readiness fails from the first moment of shutdown and while the database is down. This app publishes through
 * the outbox, so a broker outage leaves it ready and shows as degraded (the module's `readinessRequiresBroker`).
 * A failing probe answers 503 with each check's status; neither ever shows a URL, a host or a credential. Each
 * probe logs one line when its state changes (ProbeLog), not a report per call.
 */
@Controller('health')
export class HealthController {
  private readonly logger = new Logger('Health');
  private readonly liveness = new ProbeLog('liveness', this.logger);
  private readonly readiness = new ProbeLog('readiness', this.logger);

  constructor(
    private readonly health: HealthCheckService,
    private readonly messaging: MessagingHealth,
  ) {}

  @Get('live')
  @HealthCheck()
  async live(): Promise<HealthCheckResult> {
    try {
      return await this.checked(this.liveness, this.messaging.liveness());
    } catch (error) {
      // NOTE: Terminus answers every check with 503 `shutting_down` once its shutdown hook ran, liveness too;
      // a failing liveness probe would make the kubelet kill the pod in the middle of its graceful drain.
      const result =
        error instanceof ServiceUnavailableException ? (error.getResponse() as HealthCheckResult) : undefined;
      if (result?.status === 'shutting_down' && Object.keys(result.error ?? {}).length === 0) return result;
      throw error;
    }
  }

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.checked(this.readiness, this.messaging.readiness());
  }

  /** Runs a probe's checks, and records how it went in its log. */
  private async checked(
    log: ProbeLog,
    checks: Parameters<HealthCheckService['check']>[0],
  ): Promise<HealthCheckResult> {
    try {
      const result = await this.health.check(checks);
      log.record(result);
      return result;
    } catch (error) {
      if (error instanceof ServiceUnavailableException) log.record(error.getResponse() as HealthCheckResult);
      throw error;
    }
  }
}
