import { describe, expect, it } from '@jest/globals';
import type { LoggerService } from '@nestjs/common';
import type { HealthCheckResult, HealthIndicatorResult } from '@nestjs/terminus';
import { ProbeLog } from './probe-log';

function result(status: HealthCheckResult['status'], details: HealthIndicatorResult): HealthCheckResult {
  return { status, details, info: {}, error: {} };
}

function recordingLogger(): { lines: string[]; logger: LoggerService } {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      log: (message: string) => lines.push(`LOG ${message}`),
      warn: (message: string) => lines.push(`WARN ${message}`),
      error: (message: string) => lines.push(`ERROR ${message}`),
    },
  };
}

const UP = result('ok', { database: { status: 'up' }, broker: { status: 'up' } });
const DB_DOWN = (message: string) =>
  result('error', { database: { status: 'down', message }, broker: { status: 'up' } });

describe('ProbeLog', () => {
  it('logs one line per change of state, however often the probe is called, and nothing for a healthy start', () => {
    const { lines, logger } = recordingLogger();
    const log = new ProbeLog('readiness', logger);

    for (let call = 0; call < 5; call++) log.record(UP);
    for (let call = 0; call < 50; call++) log.record(DB_DOWN(`unavailable for ${call} s`));
    log.record(
      result('degraded', {
        database: { status: 'up' },
        broker: { status: 'degraded', message: 'reconnecting' },
      }),
    );
    for (let call = 0; call < 5; call++) log.record(UP);

    expect(lines).toEqual([
      'ERROR readiness: error (database down: unavailable for 0 s)',
      'WARN readiness: degraded (broker degraded: reconnecting)',
      'LOG readiness: ok',
    ]);
  });

  it('logs a probe that starts unhealthy at once', () => {
    const { lines, logger } = recordingLogger();
    new ProbeLog('liveness', logger).record(DB_DOWN('gone'));

    expect(lines).toEqual(['ERROR liveness: error (database down: gone)']);
  });
});
