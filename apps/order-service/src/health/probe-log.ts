import type { LoggerService } from '@nestjs/common';
import type { HealthCheckResult } from '@nestjs/terminus';

/**
 * Logs a probe's state as one line when it changes, and nothing while it stays the same: `readiness: error
 * (database down: ...)` when the database goes, `readiness: ok` when it is back. Terminus itself would log a
 * multi-line report at ERROR on every failed call, a few hundred lines for a ten-second outage at Kubernetes'
 * probe rate, so its own logger is off (health.module.ts).
 */
export class ProbeLog {
  private state?: string;

  constructor(
    private readonly probe: string,
    /** Where the lines go: a Logger with its context set. */
    private readonly logger: LoggerService,
  ) {}

  /** Records the result of one call of the probe; logs it if its status, or a check's, changed. */
  record(result: HealthCheckResult): void {
    const checks: Record<string, { status: string; message?: unknown } | undefined> = {
      ...result.info,
      ...result.error,
      ...result.details,
    };
    const failing = Object.entries(checks).flatMap(([name, check]) =>
      check && check.status !== 'up' ? [[name, check] as const] : [],
    );
    // A change is a change of status, the probe's or a check's: a message that varies between calls
    // (a lag, a count) does not make a new line.
    const state = [result.status, ...failing.map(([name, check]) => `${name}=${check.status}`)].join(' ');
    if (state === this.state) return;
    const first = this.state === undefined;
    this.state = state;
    if (first && result.status === 'ok') return;
    const reasons = failing.map(([name, check]) => {
      const message = typeof check.message === 'string' ? `: ${check.message}` : '';
      return `${name} ${check.status}${message}`;
    });
    const line = `${this.probe}: ${result.status}${reasons.length > 0 ? ` (${reasons.join('; ')})` : ''}`;
    if (result.status === 'ok') this.logger.log(line);
    else if (result.status === 'error') this.logger.error(line);
    else this.logger.warn(line);
  }
}
