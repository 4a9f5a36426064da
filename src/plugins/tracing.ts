import {
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { contextOf, type Tracing } from '../ops/tracing.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** OpenTelemetry traces (src/ops/tracing.ts): `NO_TRACING` when off. */
    tracing: Tracing;
  }
  interface FastifyRequest {
    /** The request's span and the context it heads; only while traces are on. */
    traced?: { span: Span; context: Context };
  }
}

/**
 * Traces: a span for each request, under the `traceparent` the client sent, made the active
 * context for everything the request does (its writes' spans, the events it writes). The
 * first plugin registered, so the last closed: the spans of everything closed before it are
 * sent. Off, it adds no hook.
 */
export const tracingPlugin = fp<{ tracing: Tracing }>(
  async (app, { tracing }) => {
    app.decorate('tracing', tracing);
    app.addHook('onClose', () => tracing.shutdown());
    if (!tracing.enabled) return;
    app.decorateRequest('traced', undefined);
    // The request's context is entered again before its handler: a body is read from the
    // socket's events, which run outside it.
    const enter = (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
      if (request.traced) context.with(request.traced.context, done);
      else done();
    };
    app.addHook('onRequest', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const parent = contextOf(request.headers);
      const span = tracing.start(
        `${request.method} ${route}`,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': request.method,
            'http.route': route,
            // The path only: a query may carry anything.
            'url.path': request.url.split('?', 1)[0] ?? '',
            'animal_store.request_id': request.id,
          },
        },
        parent,
      );
      request.traced = { span, context: trace.setSpan(parent, span) };
      enter(request, reply, done);
    });
    app.addHook('preHandler', enter);
    app.addHook('onResponse', (request, reply, done) => {
      const span = request.traced?.span;
      if (span) {
        span.setAttribute('http.response.status_code', reply.statusCode);
        if (request.caller) span.setAttribute('animal_store.account_id', request.caller.account.id);
        if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
      done();
    });
  },
  { name: 'tracing' },
);
