import type { TracerProvider } from '@opentelemetry/api';
import { openTelemetry } from './opentelemetry';

/** The no-op provider the API's global proxy delegates to while no SDK is registered; found on first use. */
let noopTracerProvider: TracerProvider | undefined;

/**
 * Whether a span or a propagated context could come of a message: `@opentelemetry/api` is installed and a
 * tracer provider or a propagator is registered. Without either every OpenTelemetry call is a no-op that still
 * allocates (a proxy tracer per lookup, a non-recording span, attribute objects), so the tracing steps stand
 * aside. Checked per message (a few property reads), since an SDK may be registered after startup.
 */
export function isTracingRegistered(): boolean {
  const api = openTelemetry();
  if (!api) return false;
  noopTracerProvider ??= new api.ProxyTracerProvider().getDelegate();
  const provider = api.trace.getTracerProvider();
  return (
    !(provider instanceof api.ProxyTracerProvider && provider.getDelegate() === noopTracerProvider) ||
    api.propagation.fields().length > 0
  );
}
