import { context, type Span, type SpanOptions, trace } from '@opentelemetry/api';
import type { Database } from './database.js';

/** What makes a span around work (src/ops/tracing.ts's `Tracing`). */
export interface SpanMaker {
  inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T>;
}

/**
 * `database` with each write made in a span (a request's, a delivery's) a span of its own under
 * it, from the call to the commit of the batch it joined; its work runs in that context whichever
 * caller's turn the batch began in, so what it writes (an event's trace context) is the
 * caller's. Writes made outside any span (housekeeping, the request log's batches) make none
 * (docs/decisions/0073-traces.md).
 */
export function tracedWrites(database: Database, tracing: SpanMaker): Database {
  const attributes = {
    'db.system.name': database.dialect === 'postgres' ? 'postgresql' : 'sqlite',
  };
  return {
    ...database,
    write: (work, options) => {
      if (!trace.getSpan(context.active())) return database.write(work, options);
      return tracing.inSpan('store write', { attributes }, (span) =>
        database.write(
          context.bind(context.active(), (tx) => {
            span.addEvent('batch began');
            return work(tx);
          }),
          options,
        ),
      );
    },
  };
}
