// OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then spans go over OTLP/HTTP
// (JSON) to that endpoint, batched. Spans are explicit, at the few places that matter (HTTP requests,
// commands, appends, projection batches, worker jobs, outbound webhooks and SMTP): no module is
// monkey-patched, which the sealed prototypes (src/http/prototypes.ts) would not allow anyway.
// Switched off, `inSpan` runs its function directly and `currentTraceContext` is empty: no SDK is
// loaded and nothing is recorded. The trace context crosses process boundaries as W3C `traceparent`:
// in events' metadata, in job payloads and in outbound webhook headers. Not `tracestate`: it is a
// caller's free text, and events are kept for good.
import { context, diag, DiagLogLevel, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Config } from './config.ts';

/** The W3C trace context as carried in metadata, payloads and headers; empty when not tracing. */
export type TraceContext = { traceparent?: string };

export type Tracing = { stop(): Promise<void> };

const tracer = trace.getTracer('employer-integrations');
let enabled = false;

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (null otherwise): the exporter, the W3C
 * propagator and the AsyncLocalStorage context manager, registered globally for this process (a
 * second service started in the same process, as some tests do, uses the first one's). `stop`
 * exports what is buffered and unregisters them.
 */
export async function startTracing(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_SERVICE_NAME' | 'OTEL_BSP_SCHEDULE_DELAY'>, logger: Logger): Promise<Tracing | null> {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || enabled) return null;
  // The SDK's own warnings and errors (a collector that refuses or cannot be reached) go to the log.
  const ignore = () => {};
  diag.setLogger({
    error: (message) => logger.error({ component: 'opentelemetry' }, message),
    warn: (message) => logger.warn({ component: 'opentelemetry' }, message),
    info: ignore, debug: ignore, verbose: ignore,
  }, DiagLogLevel.WARN);
  // Loaded only when tracing is on: a service without it never loads the SDK.
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, { defaultResource, resourceFromAttributes }, { BatchSpanProcessor, TracerProvider }] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME })),
    spanProcessors: [
      new BatchSpanProcessor({
        // The base endpoint gets the signal's path, as OTEL_EXPORTER_OTLP_ENDPOINT is specified to.
        exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }),
        scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  return {
    async stop() {
      enabled = false;
      // Exports what is still buffered; a collector gone by now costs those spans, not the shutdown.
      await provider.shutdown().catch((error: unknown) => logger.warn({ component: 'opentelemetry', err: error }, 'the last spans were not exported'));
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
    },
  };
}

export type SpanOptions = {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * The span's parent when it is not the active span: the trace context a job or an event carried;
   * null for a new trace (work that runs in whatever context woke it up, such as a subscription's batch).
   */
  parent?: TraceContext | null | undefined;
  /** Other causes (the other events of a projection batch). */
  links?: readonly TraceContext[];
};

/**
 * Runs `run` in a new active span, ended when it settles; a throw marks the span as failed, with the
 * error's name only (a message may quote data). Without tracing, `run` is called as is.
 */
export function inSpan<T>(name: string, options: SpanOptions, run: (span: Span | null) => Promise<T>): Promise<T> {
  // Not an async function: switched off, this adds not even a promise.
  if (!enabled) return run(null);
  const parent = options.parent === undefined ? context.active() : contextOf(options.parent ?? {});
  const links = (options.links ?? []).flatMap((carrier): Link[] => {
    const spanContext = trace.getSpanContext(contextOf(carrier));
    return spanContext ? [{ context: spanContext }] : [];
  });
  return tracer.startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes ?? {}, links }, parent, async (span) => {
    try {
      return await run(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The active span's trace context, to carry along (empty without tracing or an active span). */
export function currentTraceContext(): TraceContext {
  if (!enabled) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent === undefined ? {} : { traceparent: carrier.traceparent };
}

/** The trace context a job payload or an event's metadata carries, if any. */
export function traceContextOf(carrier: unknown): TraceContext | undefined {
  if (typeof carrier !== 'object' || carrier === null) return undefined;
  const { traceparent } = carrier as Record<string, unknown>;
  return typeof traceparent === 'string' ? { traceparent } : undefined;
}

function contextOf(carrier: TraceContext): Context {
  return propagation.extract(ROOT_CONTEXT, carrier);
}

export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Starts the span of an incoming request, a child of the caller's `traceparent` header when it sent
 * one, and returns it with the context to serve the request in (null without tracing).
 */
export function startServerSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes): { span: Span; context: Context } | null {
  if (!enabled) return null;
  const caller = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, caller);
  return { span, context: trace.setSpan(caller, span) };
}

export { SpanKind, SpanStatusCode, type Span };
