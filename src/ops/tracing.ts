import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Config } from '../config.js';

/**
 * OpenTelemetry traces, sent by OTLP/HTTP where the standard variables point
 * (docs/decisions/0073-traces.md). Spans are made by hand where work crosses something an
 * operator waits on: a request, a write's batch, a queue job, a webhook delivery. Each app has
 * a provider of its own, never the global one, so two apps in one process (the tests) do not
 * send each other's spans; what is global is the context, which follows a request's async
 * work, and is only installed once tracing is on. Off, `Tracing` is `NO_TRACING`: nothing is
 * loaded into the request path, and a stored trace context reads as none.
 */
export interface Tracing {
  readonly enabled: boolean;
  /** Starts a span under `parent` (the active context by default): ended by its caller. */
  start(name: string, options?: SpanOptions, parent?: Context): Span;
  /**
   * Runs `work` in a span of its own, ended with its outcome (an error marks it failed): under
   * the active span, or, given a `traceparent` stored with the work (an event's, a message's),
   * under that one (a new trace for null).
   */
  inSpan<T>(
    name: string,
    options: SpanOptions,
    work: (span: Span) => Promise<T>,
    stored?: string | null,
  ): Promise<T>;
  /** Sends every span ended so far. */
  flush(): Promise<void>;
  /** Sends every span ended so far, and stops (the app's close). */
  shutdown(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();

/** The context a `traceparent` (and `tracestate`) carries, under the root; the root without. */
export function contextOf(headers: Record<string, string | string[] | undefined>): Context {
  return propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** The context one stored `traceparent` carries (an event's, a message's). */
function storedContext(traceparent: string | null | undefined): Context {
  return traceparent ? contextOf({ traceparent }) : ROOT_CONTEXT;
}

/** The W3C `traceparent` of `ctx`'s span (the active one by default), or null without one. */
export function traceparentOf(ctx: Context = context.active()): string | null {
  if (!trace.getSpan(ctx)) return null;
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/** The `traceparent` header that makes a receiver's work a child of `span`; none without. */
export function traceHeaders(span: Span | undefined): Record<string, string> {
  const traceparent = span && traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
  return traceparent ? { traceparent } : {};
}

/** The trace and span ids of `span` (the active one by default) for a log line, named as
 * OpenTelemetry's log data model names them; none outside a span. */
export function logIds(span = trace.getSpan(context.active())): object {
  const ids = span?.spanContext();
  return ids && trace.isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}

/** Marks `span` failed by `err`, and ends it. */
function endFailed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
  span.end();
}

const noSpan = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => noSpan,
  inSpan: (_name, _options, work) => work(noSpan),
  flush: async () => {},
  shutdown: async () => {},
};

/** The sampler `OTEL_TRACES_SAMPLER` names (the SDK's own names and default). */
function samplerOf({ sampler, ratio }: NonNullable<Config['tracing']>): Sampler {
  const root = sampler.endsWith('always_off')
    ? new AlwaysOffSampler()
    : sampler.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  return sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

export function createTracing(config: Config['tracing'], version: string): Tracing {
  if (!config) return NO_TRACING;
  // Once for the process: a second app's manager would be refused, and this one serves all.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': config.serviceName,
      'service.version': version,
    }),
    sampler: samplerOf(config),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.url }) }),
    ],
  });
  const tracer: Tracer = provider.getTracer('animal-store', version);
  const start = (name: string, options: SpanOptions = {}, parent = context.active()) =>
    tracer.startSpan(name, options, parent);
  return {
    enabled: true,
    start,
    inSpan: (name, options, work, stored) => {
      const parent = stored === undefined ? context.active() : storedContext(stored);
      const span = start(name, options, parent);
      return context
        .with(trace.setSpan(parent, span), () => work(span))
        .then(
          (result) => {
            span.end();
            return result;
          },
          (err: unknown) => {
            endFailed(span, err);
            throw err;
          },
        );
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
