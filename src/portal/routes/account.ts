import type { FastifyInstance } from 'fastify';
import { listApiKeys } from '../../domain/api-keys.js';
import { deprecatedCallCount } from '../../domain/deprecations.js';
import { requireAccount, signedInAccount } from '../forms.js';
import { pageContext, sendHtml } from '../render.js';
import { accountPage } from '../views/account.js';

/** Plan, limits, the current windows' usage and the deprecated-call count. */
export async function accountPages(app: FastifyInstance): Promise<void> {
  const { database, limiter, outages } = app.ctx;

  app.get('/account', { preHandler: requireAccount }, async (request, reply) => {
    const account = signedInAccount(request);
    // Reading the counters counts nothing: looking at the page costs no quota.
    const [windows, deprecatedCalls, keys] = await Promise.all([
      limiter.usage(account.id, account.limits).catch((err) => {
        outages.failed('redis', err);
        return [];
      }),
      deprecatedCallCount(database.reader, account.id),
      listApiKeys(database.reader, account.id),
    ]);
    const view = { account, windows, deprecatedCalls, liveKeys: keys.length };
    return sendHtml(reply, accountPage(pageContext(request, reply), view));
  });
}
