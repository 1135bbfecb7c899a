import { propagation, ProxyTracerProvider, trace } from '@opentelemetry/api';

const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Whether a span or a propagated context could come of a message: a tracer provider or a propagator is
 * registered. Without either every OpenTelemetry call is a no-op that still allocates (a proxy tracer per
 * lookup, a non-recording span, attribute objects), so the tracing steps stand aside. Checked per message (a
 * few property reads), since an SDK may be registered after startup.
 */
export function isTracingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return (
    !(provider instanceof ProxyTracerProvider && provider.getDelegate() === NOOP_TRACER_PROVIDER) ||
    propagation.fields().length > 0
  );
}
