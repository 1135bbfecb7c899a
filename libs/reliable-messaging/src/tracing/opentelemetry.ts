import type * as OpenTelemetryApi from '@opentelemetry/api';

/** The provider whose factory loads the API while the module starts (before any message is published). */
export const OPENTELEMETRY_LOADER = Symbol('OPENTELEMETRY_LOADER');

/** The OpenTelemetry API as loaded at startup; undefined before, or for good when it is not installed. */
let loaded: typeof OpenTelemetryApi | undefined;

/**
 * Loads `@opentelemetry/api` (an optional peer) once, at the module's startup; without it tracing stays off and
 * every tracing step is a no-op. Any failure other than the package being absent is thrown.
 *
 * NOTE: a dynamic import, so that an app without the package can load the module at all; the API itself keeps
 * its state in a global (`Symbol.for('opentelemetry.js.api.1')`), so whichever copy loads here sees the SDK an
 * app registered through its own.
 */
export async function loadOpenTelemetry(): Promise<void> {
  if (loaded) return;
  try {
    loaded = await import('@opentelemetry/api');
  } catch (error) {
    if (!isModuleNotFound(error)) throw error;
  }
}

/** The loaded OpenTelemetry API, or undefined when it is not installed (or not loaded yet). */
export function openTelemetry(): typeof OpenTelemetryApi | undefined {
  return loaded;
}

/** The loaded OpenTelemetry API, for code that runs only once `isTracingRegistered()` said yes. */
export function otel(): typeof OpenTelemetryApi {
  if (!loaded)
    throw new Error('@opentelemetry/api is not loaded: the module calls loadOpenTelemetry() at startup');
  return loaded;
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}
