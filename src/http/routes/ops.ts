import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { withTimeout } from '../../clock.js';
import { ApiError, type ErrorDetail } from '../../errors.js';

/** How long a dependency may take to answer a readiness check. */
const READY_TIMEOUT_MS = 1_000;

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Health, readiness and metrics, for operators and load balancers: no API key, no rate limit,
 * and not in the public OpenAPI document (README, "Running in production").
 */
export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const { database, limiter, metrics, lifecycle, config } = app.ctx;
  const hide = { schema: { hide: true } };

  // Alive: the event loop turns. Touches nothing, so a database outage never restarts us.
  app.get('/healthz', hide, async () => ({ status: 'ok' }));

  // Ready for traffic: the database and (when configured) Redis answer quickly, and the
  // process is not shutting down.
  app.get('/readyz', hide, async () => {
    const checks: Record<string, Promise<unknown>> = {
      database: database.ping(READY_TIMEOUT_MS),
    };
    if (limiter.store.kind === 'redis') {
      checks.redis = withTimeout(limiter.store.ping(), READY_TIMEOUT_MS);
    }
    const names = Object.keys(checks);
    const results = await Promise.allSettled(Object.values(checks));
    const failed: ErrorDetail[] = [];
    results.forEach((result, i) => {
      if (result.status === 'rejected') {
        const reason = result.reason instanceof Error ? result.reason.message : 'no answer';
        failed.push({ location: names[i] ?? 'dependency', message: reason });
      }
    });
    if (lifecycle.draining) {
      failed.unshift({ location: 'process', message: 'shutting down' });
    } else if (lifecycle.starting) {
      failed.unshift({ location: 'process', message: 'starting: waiting for its dependencies' });
    }
    if (failed.length > 0) {
      const parts = failed.map((f) => f.location).join(' and ');
      throw new ApiError('service_unavailable', `Not ready: ${parts} unavailable.`, failed, {
        'cache-control': 'no-store',
      });
    }
    return { status: 'ready', checks: Object.fromEntries(names.map((name) => [name, 'ok'])) };
  });

  const { metrics: exposure } = config;
  if (exposure.mode !== 'public' && exposure.mode !== 'token') return;
  const authorize = async (request: FastifyRequest, _reply: FastifyReply) => {
    if (exposure.mode !== 'token') return;
    const given = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
    if (!sameSecret(given, exposure.token)) {
      throw new ApiError(
        'missing_credentials',
        'Send the metrics token as a Bearer token.',
        undefined,
        {
          'www-authenticate': 'Bearer realm="metrics"',
        },
      );
    }
  };
  app.get('/metrics', { ...hide, onRequest: authorize }, async (_request, reply) => {
    const { body, contentType } = await metrics.scrape();
    return reply.type(contentType).header('cache-control', 'no-store').send(body);
  });
}
