import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { collectDefaultMetrics, register } from 'prom-client';
import { MetricsController } from './metrics.controller';
import { tracing } from './tracing';

/** `GET /metrics` with Node's default process metrics, and the flush of traces at shutdown. */
@Module({ controllers: [MetricsController] })
export class ObservabilityModule implements OnApplicationShutdown {
  constructor() {
    // NOTE: prom-client refuses to register its default metrics twice on one registry (a second app in the
    // same process, as in tests), so they are added once.
    if (!register.getSingleMetric('process_cpu_seconds_total')) collectDefaultMetrics();
  }

  /** Exports the spans still buffered before the process exits. */
  async onApplicationShutdown(): Promise<void> {
    await tracing?.shutdown().catch(() => undefined);
  }
}
