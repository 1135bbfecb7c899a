import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/**
 * An OpenTelemetry SDK registered globally for one spec, keeping every finished span in memory: the W3C
 * propagator and the AsyncLocalStorage context manager, as `@opentelemetry/sdk-node` sets them up.
 * Start it in `beforeAll`, `stop()` it in `afterAll`.
 */
export class InMemoryTracing {
  private constructor(
    private readonly provider: NodeTracerProvider,
    private readonly exporter: InMemorySpanExporter,
  ) {}

  static start(): InMemoryTracing {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    return new InMemoryTracing(provider, exporter);
  }

  /** Every span finished so far. */
  get spans(): ReadableSpan[] {
    return this.exporter.getFinishedSpans();
  }

  /** Spans finished so far whose name matches. */
  named(pattern: RegExp): ReadableSpan[] {
    return this.spans.filter((span) => pattern.test(span.name));
  }

  /** Forgets the spans finished so far. */
  reset(): void {
    this.exporter.reset();
  }

  /** Unregisters the SDK, leaving the global API as it was without one. */
  async stop(): Promise<void> {
    await this.provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  }
}

/** The id of a span's parent, whichever SDK version reports it. */
export function parentSpanId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
