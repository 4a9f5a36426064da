import type { FastifyInstance } from 'fastify';
import { type Html, html } from '../html.js';
import { requireAccount, signedInAccount } from '../portal/forms.js';
import { pageContext, sendHtml } from '../portal/render.js';
import { csrfField, layout, type PageContext } from '../portal/views/layout.js';
import { commit } from '../store/change.js';
import { LIVE_DATA, resetSandbox, type SandboxReset } from './domain.js';

/**
 * The portal's reset of the test data (`/portal/sandbox`): a page that says what goes and asks
 * to confirm, and the reset itself, as `POST /v1/sandbox/reset` does it. Production has none.
 */
export async function sandboxPages(app: FastifyInstance): Promise<void> {
  const { clock, config } = app.ctx;
  const live = config.env === 'production';
  const signedIn = { preHandler: requireAccount };
  const form = { preValidation: app.csrfProtection, preHandler: requireAccount };

  app.get('/sandbox', signedIn, (request, reply) =>
    sendHtml(reply, sandboxPage(pageContext(request, reply), live), live ? 403 : 200),
  );

  app.post('/sandbox', form, async (request, reply) => {
    const context = pageContext(request, reply);
    const account = signedInAccount(request);
    const seed = (request.body as Record<string, unknown> | undefined)?.seed === 'sample';
    const reset = await commit(app.ctx.database, resetSandbox(clock, config.env, account.id, seed));
    if (!reset.ok) return sendHtml(reply, sandboxPage(context, live), 403);
    await app.freshness.wrote(request, account.id, 'changes');
    return sendHtml(reply, sandboxPage(context, live, reset.value));
  });
}

const counted = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function sandboxPage(context: PageContext, live: boolean, done?: SandboxReset): Html {
  const body = live
    ? html`<p>${LIVE_DATA} Test data is reset on a development or staging instance.</p>`
    : done
      ? html`<section class="card" role="status" aria-labelledby="done-title">
  <h2 id="done-title">Test data reset</h2>
  <p>Removed ${counted(done.removed.pets, 'pet')}, ${counted(done.removed.categories, 'category', 'categories')},
  ${counted(done.removed.orders, 'order')}, ${counted(done.removed.messages, 'message')},
  ${counted(done.removed.events, 'event')} and ${counted(done.removed.deliveries, 'webhook delivery', 'webhook deliveries')}.${
    done.seeded
      ? html` Added the sample: ${counted(done.seeded.categories, 'category', 'categories')},
  ${counted(done.seeded.pets, 'pet')} and ${counted(done.seeded.orders, 'order')}.`
      : ''
  }</p>
  <p><a href="/portal/account">Back to your account</a></p>
</section>`
      : html`<form method="post" action="/portal/sandbox" class="card">
  ${csrfField(context.csrf)}
  <p>This removes every pet, category, order, message, event and webhook delivery of this
  account, for good. Your API keys, webhook endpoints and request log stay. New ids go on from
  where they were.</p>
  <label class="choice"><input type="checkbox" name="seed" value="sample"> Add a sample
  catalogue afterwards (three categories, pets in each status, an order)</label>
  <p><button type="submit" class="danger">Reset test data</button>
  <a href="/portal/account">Cancel</a></p>
</form>`;
  return layout({ ...context, current: 'account' }, 'Reset test data', body);
}
