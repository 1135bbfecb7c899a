import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { NodeSDK } from '@opentelemetry/sdk-node';

/**
 * OpenTelemetry tracing for the order service, started before Nest loads (import this file first in main.ts,
 * so the HTTP instrumentation wraps `http` before Express requires it). Off unless `OTEL_TRACES_EXPORTER` is
 * set to an exporter: `otlp` (endpoint from `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * protocol from `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` by default, `http/json`, `grpc`) or `console`.
 * Every other `OTEL_*` variable works as the SDK documents it (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, ...).
 * The service name defaults to `order-service`.
 */
function startTracing(): NodeSDK | undefined {
  const exporter = process.env.OTEL_TRACES_EXPORTER;
  if (!exporter || exporter === 'none' || process.env.OTEL_SDK_DISABLED === 'true') return undefined;
  // NOTE: the SDK also starts OTLP metrics and logs exporters when their variables are unset; metrics are served
  // by GET /metrics (prom-client) and logs go to stdout, so both stay off unless asked for.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? 'order-service',
    instrumentations: [new HttpInstrumentation()],
  });
  sdk.start();
  return sdk;
}

/** The running SDK, when tracing is on; ObservabilityModule flushes it at shutdown. */
export const tracing = startTracing();
