import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SCOPES } from '../src/domain/scopes.js';
import { ADDRESS_FAILURE_LIMITS, EMAIL_FAILURE_LIMITS } from '../src/http/sign-in-throttle.js';
import { BAN_GRACE_MS } from '../src/limits/rate-limiter.js';
import {
  as,
  basic,
  createCategory,
  createPet,
  errorCode,
  freshIp,
  newTenant,
  PRODUCTION_ENV,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';
import { Visitor } from './portal-visitor.js';

const newEmail = () => `portal-${crypto.randomUUID()}@example.com`;
const PASSWORD = 'a long enough password';

function notice(res: LightMyRequestResponse): string | undefined {
  return /<p class="notice [a-z]+" role="[a-z]+">([^<]*)<\/p>/.exec(res.body)?.[1];
}

function createdSecret(res: LightMyRequestResponse): string {
  const secret = /id="new-key" type="text" readonly value="([^"]+)"/.exec(res.body)?.[1];
  assert.ok(secret, 'the new key is on the page');
  return secret;
}

describe('developer portal', () => {
  let t: TestApp;
  let now = Date.now();
  before(async () => {
    t = await startApp({ clock: { now: () => new Date(now) } });
  });
  after(() => t.close());

  describe('pages and headers', () => {
    it('sends a person from the root to the portal, and the portal to sign-in', async () => {
      const root = await t.app.inject({ url: '/' });
      assert.equal(root.statusCode, 302);
      assert.equal(root.headers.location, '/portal');
      const portal = await t.app.inject({ url: '/portal' });
      assert.equal(portal.headers.location, '/portal/sign-in');
      for (const path of ['/portal/account', '/portal/keys']) {
        const res = await t.app.inject({ url: path });
        assert.equal(res.statusCode, 303, path);
        assert.equal(res.headers.location, '/portal/sign-in');
      }
    });

    it('serves pages with a strict CSP, the usual security headers, and no caching', async () => {
      const res = await t.app.inject({ url: '/portal/sign-in' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
      const csp = String(res.headers['content-security-policy']);
      for (const directive of [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "object-src 'none'",
      ]) {
        assert.ok(csp.includes(directive), `${directive} in ${csp}`);
      }
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['x-frame-options'], 'DENY');
      assert.equal(res.headers['referrer-policy'], 'same-origin');
      assert.equal(res.headers['cache-control'], 'no-store');
      // Nothing on the page comes from elsewhere: no CDN, no font service.
      assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//);
    });

    it('keeps cookies, forms and page headers off the API', async () => {
      const tenant = await newTenant(t.app);
      const form = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/categories',
        payload: 'name=Dogs',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(form.statusCode, 400);
      assert.equal(form.json().code, 'unsupported_content_type');
      const list = await as(t.app, tenant, { url: '/v1/pets' });
      assert.equal(list.headers['content-security-policy'], undefined);
      assert.equal(list.headers['set-cookie'], undefined);
    });

    it('labels every input', async () => {
      for (const path of ['/portal/sign-in', '/portal/sign-up']) {
        const { body } = await t.app.inject({ url: path });
        const ids = [...body.matchAll(/<input id="([^"]+)"/g)].map((m) => m[1]);
        assert.ok(ids.length >= 2, path);
        for (const id of ids) assert.ok(body.includes(`<label for="${id}">`), `${path}: ${id}`);
      }
    });

    it('serves its stylesheet and script from the service itself', async () => {
      const css = await t.app.inject({ url: '/portal/assets/portal.css' });
      assert.equal(css.statusCode, 200);
      assert.match(String(css.headers['content-type']), /text\/css/);
      const js = await t.app.inject({ url: '/portal/assets/portal.js' });
      assert.equal(js.statusCode, 200);
      assert.match(String(js.headers['content-type']), /javascript/);
    });

    it('answers an unknown portal page with a 404 page, and keeps pages out of the API document', async () => {
      const res = await t.app.inject({ url: '/portal/nowhere' });
      assert.equal(res.statusCode, 404);
      assert.match(String(res.headers['content-type']), /text\/html/);
      assert.match(res.body, /Page not found/);
      const missing = await t.app.inject({ url: '/portal/assets/nothing.css' });
      assert.equal(missing.statusCode, 404);
      const paths = Object.keys((t.app.swagger() as { paths: object }).paths);
      assert.deepEqual(
        paths.filter((p) => p.startsWith('/portal')),
        [],
      );
    });
  });

  describe('sign-up', () => {
    it('creates an account, signs it in, and the account works on the API', async () => {
      const visitor = new Visitor(t.app);
      const email = newEmail();
      const res = await visitor.signUp(email);
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/portal/keys?welcome=1');
      assert.ok(visitor.cookies.has('as_session'));
      const keys = await visitor.get(String(res.headers.location));
      assert.equal(keys.statusCode, 200);
      assert.match(notice(keys) ?? '', /account is ready/);
      const api = await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(email, PASSWORD) },
      });
      assert.equal(api.statusCode, 200);
    });

    it('applies the API password rules in the API words, and keeps the typed email', async () => {
      const visitor = new Visitor(t.app);
      const email = newEmail();
      const res = await visitor.signUp(email, 'short');
      assert.equal(res.statusCode, 400);
      assert.match(res.body, new RegExp(`value="${email}"`));
      assert.match(res.body, /aria-invalid="true"/);
      assert.ok(!visitor.cookies.has('as_session'));
      const api = await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email, password: 'short' },
        remoteAddress: freshIp(),
      });
      assert.equal(api.statusCode, 400);
      const rule = api.json().details[0].message;
      assert.equal(rule, 'must be at least 12 characters long');
      assert.ok(res.body.includes(`Password ${rule}.`), 'the API words on the page');
    });

    it('refuses a malformed email and a taken one like the API does', async () => {
      const visitor = new Visitor(t.app);
      const bad = await visitor.signUp('not-an-email');
      assert.equal(bad.statusCode, 400);
      const api = await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email: 'not-an-email', password: PASSWORD },
        remoteAddress: freshIp(),
      });
      assert.ok(bad.body.includes(`Email ${api.json().details[0].message}.`));

      const email = newEmail();
      assert.equal((await new Visitor(t.app).signUp(email)).statusCode, 303);
      const again = await new Visitor(t.app).signUp(email.toUpperCase());
      assert.equal(again.statusCode, 409);
      const taken = await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email, password: PASSWORD },
        remoteAddress: freshIp(),
      });
      assert.equal(taken.statusCode, 409);
      assert.equal(notice(again), taken.json().message);
    });

    it('escapes what a person typed', async () => {
      const res = await new Visitor(t.app).signUp('"><script>alert(1)</script>@x');
      assert.equal(res.statusCode, 400);
      assert.doesNotMatch(res.body, /<script>alert/);
      assert.match(res.body, /&quot;&gt;&lt;script&gt;/);
    });
  });

  describe('CSRF', () => {
    it('refuses every form posted without its token, and changes nothing', async () => {
      const email = newEmail();
      const visitor = new Visitor(t.app);
      await visitor.signUp(email);

      const noToken = await visitor.post('/portal/keys', { name: 'forged' }, { csrf: false });
      assert.equal(noToken.statusCode, 403);
      assert.match(noToken.body, /Form expired/);
      const forged = await visitor.post(
        '/portal/keys',
        { name: 'forged', _csrf: 'forged' },
        {
          csrf: false,
        },
      );
      assert.equal(forged.statusCode, 403);
      const keys = await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(email, PASSWORD) },
      });
      assert.deepEqual(keys.json(), []);

      const signOut = await visitor.post('/portal/sign-out', {}, { csrf: false });
      assert.equal(signOut.statusCode, 403);
      assert.equal((await visitor.get('/portal/account')).statusCode, 200, 'still signed in');
    });

    it("refuses another browser's token, even with that browser's CSRF cookie planted", async () => {
      const attacker = new Visitor(t.app);
      await attacker.signUp(newEmail());
      await attacker.get('/portal/keys');
      const victim = new Visitor(t.app);
      const victimEmail = newEmail();
      await victim.signUp(victimEmail);
      await victim.get('/portal/keys');
      // Cookie tossing: the attacker's own secret cookie and a token made with it.
      victim.cookies.set('as_csrf', String(attacker.cookies.get('as_csrf')));
      const forged = await victim.post(
        '/portal/keys',
        { name: 'planted', _csrf: attacker.csrf },
        { csrf: false },
      );
      assert.equal(forged.statusCode, 403);
      const keys = await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(victimEmail, PASSWORD) },
      });
      assert.deepEqual(keys.json(), []);
    });

    it('refuses sign-in and sign-up without the token, and a token from another browser', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      const attacker = new Visitor(t.app);
      await attacker.get('/portal/sign-in');
      const victim = new Visitor(t.app);
      await victim.get('/portal/sign-in');
      // The victim's own CSRF cookie, with a token made for the attacker's.
      const res = await victim.post(
        '/portal/sign-in',
        {
          email,
          password: PASSWORD,
          _csrf: attacker.csrf,
        },
        { csrf: false },
      );
      assert.equal(res.statusCode, 403);
      assert.ok(!victim.cookies.has('as_session'));
      const signUp = await new Visitor(t.app).post('/portal/sign-up', {
        email: newEmail(),
        password: PASSWORD,
      });
      assert.equal(signUp.statusCode, 403);
    });
  });

  describe('sign-in', () => {
    it('says the same thing for an unknown email and a wrong password', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      const wrong = await new Visitor(t.app).signIn(email, 'the wrong password');
      const unknown = await new Visitor(t.app).signIn(newEmail(), 'the wrong password');
      assert.equal(wrong.statusCode, 401);
      assert.equal(unknown.statusCode, 401);
      assert.equal(notice(wrong), 'The email or password is wrong.');
      assert.equal(notice(unknown), notice(wrong));
    });

    it('asks for missing fields without checking anything', async () => {
      const res = await new Visitor(t.app).signIn('', '');
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /Enter your email\./);
      assert.match(res.body, /Enter your password\./);
    });

    it('signs in, case-insensitively on the email, with a fresh session each time', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      const visitor = new Visitor(t.app);
      const first = await visitor.signIn(email.toUpperCase(), PASSWORD);
      assert.equal(first.statusCode, 303);
      assert.equal(first.headers.location, '/portal/account');
      const firstSession = visitor.cookies.get('as_session');
      const old = new Visitor(t.app);
      old.cookies.set('as_session', String(firstSession));
      // A form from before the sign-in carries a token of the signed-out browser: refused.
      const stale = await visitor.post('/portal/sign-in', { email, password: PASSWORD });
      assert.equal(stale.statusCode, 403);
      // A signed-in page's token signs in again (a second tab's sign-in form, say).
      await visitor.get('/portal/account');
      const again = await visitor.post('/portal/sign-in', { email, password: PASSWORD });
      assert.equal(again.statusCode, 303);
      assert.notEqual(visitor.cookies.get('as_session'), firstSession);
      // Signing in again ended the browser's previous session.
      assert.equal((await old.get('/portal/account')).statusCode, 303);
    });

    it('limits wrong passwords per email from one address, right password included', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      const ip = freshIp();
      for (let i = 0; i < 5; i++) {
        const res = await new Visitor(t.app, ip).signIn(email, 'a wrong password');
        assert.equal(res.statusCode, 401, `attempt ${i + 1}`);
      }
      const limited = await new Visitor(t.app, ip).signIn(email, PASSWORD);
      assert.equal(limited.statusCode, 429);
      assert.match(
        notice(limited) ?? '',
        /Too many attempts\. Wait \d+ seconds?, then try again\./,
      );
      assert.ok(Number(limited.headers['retry-after']) >= 1);
      // The person at another address is not locked out by it, nor is another account.
      assert.equal((await new Visitor(t.app).signIn(email, PASSWORD)).statusCode, 303);
      const other = newEmail();
      await new Visitor(t.app).signUp(other);
      assert.equal((await new Visitor(t.app, ip).signIn(other, PASSWORD)).statusCode, 303);
    });

    it('limits wrong passwords per email across addresses', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      for (let i = 0; i < EMAIL_FAILURE_LIMITS.perMinute; i++) {
        const res = await new Visitor(t.app).signIn(email, 'a wrong password');
        assert.equal(res.statusCode, 401, `attempt ${i + 1}`);
      }
      assert.equal((await new Visitor(t.app).signIn(email, PASSWORD)).statusCode, 429);
    });

    it('never counts a right password against the email', async () => {
      const email = newEmail();
      await new Visitor(t.app).signUp(email);
      const ip = freshIp();
      for (let i = 0; i < 8; i++) {
        const res = await new Visitor(t.app, ip).signIn(email, PASSWORD);
        assert.equal(res.statusCode, 303, `sign-in ${i + 1}`);
      }
    });

    it('limits wrong passwords per client address, across emails', async () => {
      const ip = freshIp();
      let status = 0;
      let attempts = 0;
      while (attempts < 25) {
        attempts++;
        status = (await new Visitor(t.app, ip).signIn(newEmail(), 'a wrong password')).statusCode;
        if (status === 429) break;
      }
      assert.equal(status, 429);
      assert.equal(attempts, ADDRESS_FAILURE_LIMITS.perMinute + 1);
    });

    it('limits sign-ups per client address too', async () => {
      const ip = freshIp();
      for (let i = 0; i < 20; i++) {
        assert.equal((await new Visitor(t.app, ip).signUp(newEmail())).statusCode, 303, `${i}`);
      }
      const limited = await new Visitor(t.app, ip).signUp(newEmail());
      assert.equal(limited.statusCode, 429);
      assert.match(notice(limited) ?? '', /Too many attempts/);
    });
  });

  describe('keys', () => {
    it('makes full-access, read-only and ticked-scope keys, lists their access, and refuses none ticked', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      const form = await visitor.get('/portal/keys');
      assert.match(form.body, /<input type="radio" name="access" value="full" checked>/);
      assert.match(form.body, /name="scope" value="pets:write"/);

      createdSecret(await visitor.post('/portal/keys', { name: 'everything' }));
      await visitor.get('/portal/keys');
      const readOnly = createdSecret(
        await visitor.post('/portal/keys', { name: 'dashboard', access: 'read' }),
      );
      await visitor.get('/portal/keys');
      const ticked = createdSecret(
        await visitor.post('/portal/keys', {
          name: 'orders',
          access: 'custom',
          scope: ['orders:write', 'pets:read'],
        }),
      );
      const list = await visitor.get('/portal/keys');
      assert.match(
        list.body,
        /<td data-label="Access"><code>pets:read<\/code>, <code>orders:write<\/code><\/td>/,
      );
      assert.match(
        list.body,
        /<td data-label="Access">Full access<\/td>/,
        'a key made as the form is',
      );

      const read = { authorization: `Bearer ${readOnly}` };
      assert.equal((await t.app.inject({ url: '/v1/pets', headers: read })).statusCode, 200);
      const refused = await t.app.inject({
        method: 'POST',
        url: '/v1/categories',
        headers: read,
        payload: { name: 'No' },
      });
      assert.equal(refused.statusCode, 403);
      const orders = { authorization: `Bearer ${ticked}` };
      assert.equal(
        (await t.app.inject({ url: '/v1/store/orders', headers: orders })).statusCode,
        200,
      );
      assert.equal((await t.app.inject({ url: '/v1/events', headers: orders })).statusCode, 403);

      const none = await visitor.post('/portal/keys', { name: 'nothing', access: 'custom' });
      assert.equal(none.statusCode, 400);
      assert.match(none.body, /Tick at least one scope/);
      assert.match(none.body, /<input type="radio" name="access" value="custom" checked>/);
    });

    it('makes a publishable key for the origins written, and refuses one that is not an origin', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      const form = await visitor.get('/portal/keys');
      assert.match(form.body, /name="access" value="publishable"/);
      const wrong = await visitor.post('/portal/keys', {
        name: 'shop',
        access: 'publishable',
        origins: 'https://shop.example/catalogue',
      });
      assert.equal(wrong.statusCode, 400);
      assert.match(wrong.body, /is not an origin/);
      assert.match(wrong.body, /<input type="radio" name="access" value="publishable" checked>/);
      await visitor.get('/portal/keys');
      const made = await visitor.post('/portal/keys', {
        name: 'shop',
        access: 'publishable',
        origins: 'https://shop.example  http://localhost:5173',
      });
      const secret = createdSecret(made);
      assert.match(secret, /^as_pk_test_/);
      assert.match(
        made.body,
        /-H &quot;Origin: https:\/\/shop.example&quot;|-H "Origin: https:\/\/shop.example"/,
      );
      const list = await visitor.get('/portal/keys');
      assert.match(
        list.body,
        /Publishable: reads the catalogue from <code>http:\/\/localhost:5173<\/code>, <code>https:\/\/shop.example<\/code>/,
      );
      const read = await t.app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer ${secret}`, origin: 'http://localhost:5173' },
      });
      assert.equal(read.statusCode, 200, read.body);
    });

    it('fails closed: an access or scope the form does not offer is a 400 naming the values, and makes no key', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      createdSecret(await visitor.post('/portal/keys', { name: 'kept', access: 'read' }));
      const keys = async () =>
        [...(await visitor.get('/portal/keys')).body.matchAll(/<code>(as_test_[^<]+)<\/code>/g)]
          .map((match) => match[1])
          .sort();
      const before = await keys();
      assert.equal(before.length, 1);
      const offered = SCOPES;
      const refused: Array<[string, Record<string, string | string[]>, 'access' | 'scope']> = [
        ['CUSTOM', { access: 'CUSTOM', scope: ['pets:read'] }, 'access'],
        ['custom with a trailing space', { access: 'custom ', scope: ['pets:read'] }, 'access'],
        ['an empty access', { access: '' }, 'access'],
        ['none', { access: 'none' }, 'access'],
        ['full with a trailing space', { access: 'full ' }, 'access'],
        ['read in capitals', { access: 'Read' }, 'access'],
        ['a repeated access field', { access: ['read', 'full'] }, 'access'],
        ['an unknown scope', { access: 'custom', scope: ['pets:read', 'pets:admin'] }, 'scope'],
        ['a scope in capitals', { access: 'custom', scope: ['PETS:READ'] }, 'scope'],
        ['an empty scope', { access: 'custom', scope: [''] }, 'scope'],
        ['an unknown scope beside full access', { access: 'full', scope: ['*'] }, 'scope'],
      ];
      for (const [what, fields, field] of refused) {
        await visitor.get('/portal/keys');
        const res = await visitor.post('/portal/keys', { name: what, ...fields });
        assert.equal(res.statusCode, 400, what);
        assert.ok(!res.body.includes('id="new-key"'), `${what}: no key shown`);
        const error = /<p class="field-error" id="access-error">([^<]*)<\/p>/.exec(res.body)?.[1];
        assert.ok(error, `${what}: an error by the access field`);
        if (field === 'access') {
          assert.match(error, /full, read, custom or publishable/, what);
          // Nothing is shown chosen: sending the page again does not make a key of some default.
          assert.doesNotMatch(res.body, /name="access" value="[a-z]+" checked>/, what);
        } else {
          for (const scope of offered) assert.ok(error.includes(scope), `${what}: lists ${scope}`);
        }
      }
      assert.deepEqual(await keys(), before, 'no key made');
      // Only an access left out is the form's default, as the API's key without scopes.
      const unsent = await visitor.post('/portal/keys', { name: 'no access field' });
      assert.equal(unsent.statusCode, 201);
    });

    it('refuses on the API what the form refuses: scopes are exact, and no field is dropped', async () => {
      const tenant = await newTenant(t.app);
      const post = (payload: unknown) =>
        t.app.inject({
          method: 'POST',
          url: '/v1/keys',
          headers: { authorization: basic(tenant.email, tenant.password) },
          payload: payload as Record<string, unknown>,
        });
      const list = async () =>
        (
          await t.app.inject({
            url: '/v1/keys',
            headers: { authorization: basic(tenant.email, tenant.password) },
          })
        )
          .json()
          .map((key: { id: string }) => key.id);
      const before = await list();
      for (const payload of [
        { scopes: ['PETS:READ'] },
        { scopes: ['pets:read '] },
        { scopes: [''] },
        { scopes: ['pets:read', 'none'] },
        { scopes: [] },
        { scopes: null },
        { scopes: 'pets:read' },
        { scope: ['pets:read'] },
        { access: 'read' },
      ]) {
        const res = await post(payload);
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        assert.equal(errorCode(res), 'validation_failed', JSON.stringify(payload));
      }
      assert.deepEqual(await list(), before, 'no key made');
    });

    it('acts once when a form is sent twice: one account, one key, its secret shown once', async () => {
      const visitor = new Visitor(t.app);
      const email = newEmail();
      await visitor.get('/portal/sign-up');
      const formKey = visitor.formKey;
      assert.ok(formKey, 'the sign-up form carries a key');
      // A double click: the second is sent before the first is answered, with the same cookies.
      const both = await Promise.all([
        visitor.post('/portal/sign-up', { email, password: PASSWORD }, { formKey }),
        visitor.post('/portal/sign-up', { email, password: PASSWORD }, { formKey }),
      ]);
      for (const res of both) {
        assert.equal(res.statusCode, 303, res.body);
        assert.equal(res.headers.location, '/portal/keys?welcome=1');
      }
      // Without the form's key, the same email is taken.
      const again = await new Visitor(t.app).signUp(email);
      assert.equal(again.statusCode, 409);

      await visitor.get('/portal/keys');
      const keyForm = visitor.formKey;
      const both2 = await Promise.all([
        visitor.post('/portal/keys', { name: 'once' }, { formKey: keyForm }),
        visitor.post('/portal/keys', { name: 'once' }, { formKey: keyForm }),
      ]);
      const shown = both2.filter((res) => res.statusCode === 201);
      assert.equal(shown.length, 1, 'one answer shows the secret');
      const secret = createdSecret(shown[0] as LightMyRequestResponse);
      const other = both2.find((res) => res.statusCode !== 201) as LightMyRequestResponse;
      assert.equal(other.statusCode, 200);
      assert.ok(!other.body.includes(secret), 'the second answer never shows the secret');
      assert.match(notice(other) ?? '', /already\. Its secret was shown once/);
      const list = await visitor.get('/portal/keys');
      assert.equal(list.body.match(/\/revoke"/g)?.length, 1, 'one key');
      // A new rendering of the form is a new key: another key.
      const c = await visitor.post('/portal/keys', { name: 'once' });
      assert.notEqual(createdSecret(c), secret);
    });

    it('keeps "shown this once" true: a reload of the new-key page re-posts, and shows no secret', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      const formKey = visitor.formKey;
      const created = await visitor.post('/portal/keys', { name: 'reloaded' }, { formKey });
      assert.equal(created.statusCode, 201);
      assert.match(created.body, /It is shown this once; we keep only a hash of it\./);
      const secret = createdSecret(created);
      // The browser's reload: the same form, its key and fields, sent again.
      for (const reload of [1, 2]) {
        const res = await visitor.post('/portal/keys', { name: 'reloaded' }, { formKey });
        assert.equal(res.statusCode, 200, `reload ${reload}`);
        assert.ok(!res.body.includes(secret), `reload ${reload} shows the secret`);
        assert.ok(!res.body.includes('id="new-key"'));
        assert.match(notice(res) ?? '', new RegExp(`made the key ${secret.slice(0, 12)}… already`));
      }
      const list = await visitor.get('/portal/keys');
      assert.equal(list.body.match(/\/revoke"/g)?.length, 1, 'one key');
    });

    it("shows a form's first answer again to its own session alone: another browser of the account sending its key is refused", async () => {
      const email = newEmail();
      const mine = new Visitor(t.app);
      await mine.signUp(email);
      const theirs = new Visitor(t.app);
      assert.equal((await theirs.signIn(email, PASSWORD)).statusCode, 303);
      await mine.get('/portal/keys');
      const formKey = mine.formKey;
      const created = await mine.post('/portal/keys', { name: 'mine' }, { formKey });
      assert.equal(created.statusCode, 201);
      const secret = createdSecret(created);
      // The other browser, signed in to the same account, sends the key of this one's form.
      await theirs.get('/portal/keys');
      const refused = await theirs.post('/portal/keys', { name: 'mine' }, { formKey });
      assert.equal(refused.statusCode, 409, refused.body);
      assert.match(refused.body, /idempotency_key_in_use/);
      assert.match(refused.body, /sent from another signed-in browser/);
      assert.ok(!refused.body.includes(secret));
      assert.equal(notice(refused), undefined, 'not even told that the form made a key');
      // This browser's own resend still lands on its first answer; one key in all.
      const again = await mine.post('/portal/keys', { name: 'mine' }, { formKey });
      assert.equal(again.statusCode, 200);
      assert.match(notice(again) ?? '', /already\. Its secret was shown once/);
      const list = await mine.get('/portal/keys');
      assert.equal(list.body.match(/\/revoke"/g)?.length, 1, 'one key');
    });

    it('shows a new key once, lists it by prefix, and revokes it after a confirmation', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      const created = await visitor.post('/portal/keys', { name: 'ci <runner>' });
      assert.equal(created.statusCode, 201);
      assert.equal(created.headers['cache-control'], 'no-store');
      const secret = createdSecret(created);
      assert.match(secret, /^as_test_/);
      assert.match(created.body, /ci &lt;runner&gt;/);
      const call = await t.app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(call.statusCode, 200);

      const list = await visitor.get('/portal/keys');
      assert.ok(!list.body.includes(secret));
      assert.ok(list.body.includes(secret.slice(0, 12)));
      const keyId = /href="\/portal\/keys\/(key_[0-9A-Za-z]+)\/revoke"/.exec(list.body)?.[1];
      assert.ok(keyId);

      const confirm = await visitor.get(`/portal/keys/${keyId}/revoke`);
      assert.equal(confirm.statusCode, 200);
      assert.match(confirm.body, /This cannot be undone/);
      const revoked = await visitor.post(`/portal/keys/${keyId}/revoke`, {});
      assert.equal(revoked.statusCode, 303);
      assert.equal(revoked.headers.location, '/portal/keys?revoked=1');
      const after = await t.app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(after.statusCode, 401);
      // Revoked once; a second post finds nothing to revoke.
      assert.equal((await visitor.post(`/portal/keys/${keyId}/revoke`, {})).statusCode, 404);
    });

    it("answers 404 for another account's key, and leaves it working", async () => {
      const other = await newTenant(t.app);
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      assert.equal((await visitor.get(`/portal/keys/${other.keyId}/revoke`)).statusCode, 404);
      const res = await visitor.post(`/portal/keys/${other.keyId}/revoke`, {});
      assert.equal(res.statusCode, 404);
      const call = await t.app.inject({ url: '/v1/pets', headers: other.headers });
      assert.equal(call.statusCode, 200);
    });

    it('refuses a name the API would refuse, creating nothing', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      const res = await visitor.post('/portal/keys', { name: 'x'.repeat(101) });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /at most 100 characters/);
      assert.match(res.body, /No test keys/);
    });

    it('sends a signed-out form back to sign-in', async () => {
      const visitor = new Visitor(t.app);
      await visitor.get('/portal/sign-in');
      const res = await visitor.post('/portal/keys', { name: 'x' });
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/portal/sign-in');
    });
  });

  describe('account page', () => {
    it('shows plan, limits and usage without counting the visit', async () => {
      const visitor = new Visitor(t.app);
      const email = newEmail();
      await visitor.signUp(email);
      await visitor.get('/portal/keys');
      const secret = createdSecret(await visitor.post('/portal/keys', {}));
      const tenant = { headers: { authorization: `Bearer ${secret}` } } as Tenant;
      const category = await createCategory(t.app, tenant);
      const pet = await createPet(t.app, tenant, { categoryId: category.id });
      // Four calls in all, one of them to the deprecated GET /v1/pets/{petId}.
      await as(t.app, tenant, { url: '/v1/pets' });
      await as(t.app, tenant, { url: `/v1/pets/${pet.id}` });
      const page = await visitor.get('/portal/account');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, new RegExp(email));
      assert.match(page.body, /<dd>Free<\/dd>/);
      // The suite's clock stands still, so both windows hold all four calls.
      assert.match(page.body, /id="usage-minute" min="0" max="60"[^>]* value="4"/);
      assert.match(page.body, /id="usage-day" min="0" max="1000"[^>]* value="4"/);
      assert.match(page.body, /1 call to deprecated operations so far/);
      assert.match(page.body, /href="\/docs\/"/);
      const again = await visitor.get('/portal/account');
      assert.match(again.body, /id="usage-minute"[^>]* value="4"/);
    });
  });

  describe('limits and bans', () => {
    it('says when the account is limited and a key banned, and until when', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      const secret = createdSecret(await visitor.post('/portal/keys', { name: 'noisy' }));
      const tenant = { headers: { authorization: `Bearer ${secret}` } } as Tenant;
      const calm = await visitor.get('/portal/keys');
      assert.doesNotMatch(calm.body, /Rate limited|Banned/);
      // The Free plan's 60 a minute, then past the ban threshold (20 refused) while limited,
      // after the grace that follows the first refusal. The suite's clock stands still but for
      // that: all of them in one minute.
      now = (Math.floor(now / 60_000) + 1) * 60_000 + 5_000;
      for (let i = 0; i < 60 + 1; i++) await as(t.app, tenant, { url: '/v1/account' });
      now += BAN_GRACE_MS;
      for (let i = 0; i < 21; i++) await as(t.app, tenant, { url: '/v1/account' });
      const banned = await as(t.app, tenant, { url: '/v1/account' });
      assert.equal(errorCode(banned), 'key_banned');
      const minuteEnds = new Date((Math.floor(now / 60_000) + 1) * 60_000).toISOString();
      const banEnds = new Date(now + 15 * 60_000).toISOString();
      for (const path of ['/portal/keys', '/portal/account']) {
        const page = await visitor.get(path);
        assert.match(page.body, /<div class="notice warning" role="status">/, path);
        assert.match(page.body, /Rate limited\.<\/strong> Your account has used all 60 requests/);
        assert.ok(page.body.includes(`until\n  <time datetime="${minuteEnds}">`), path);
        assert.match(page.body, /Key banned\.<\/strong> The key “noisy”/);
        assert.ok(page.body.includes(`<time datetime="${banEnds}">`), path);
      }
      const keys = await visitor.get('/portal/keys');
      assert.match(keys.body, /<span class="badge warning">Banned until <time/);
    });

    it('heads the keys by their environment', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      await visitor.get('/portal/keys');
      const page = await visitor.post('/portal/keys', {});
      assert.match(page.body, /<caption>Test keys<\/caption>/);
      assert.doesNotMatch(page.body, /Live keys/);
      assert.match((await visitor.get('/portal/account')).body, /<dt>Test API keys<\/dt>/);
    });
  });

  describe('password change', () => {
    it('changes the password and signs out every other browser, not this one', async () => {
      const email = newEmail();
      const here = new Visitor(t.app);
      await here.signUp(email);
      const elsewhere = new Visitor(t.app);
      await elsewhere.signIn(email, PASSWORD);
      assert.equal((await elsewhere.get('/portal/account')).statusCode, 200);

      await here.get('/portal/account');
      const next = 'a brand new long password';
      const res = await here.post('/portal/account/password', {
        current_password: PASSWORD,
        new_password: next,
      });
      assert.equal(res.statusCode, 200);
      assert.equal(notice(res), 'Your password is changed, and 1 other browser was signed out.');
      assert.equal((await here.get('/portal/account')).statusCode, 200, 'this browser stays');
      const gone = await elsewhere.get('/portal/account');
      assert.equal(gone.statusCode, 303, 'the other browser is signed out');
      assert.equal((await new Visitor(t.app).signIn(email, PASSWORD)).statusCode, 401);
      assert.equal((await new Visitor(t.app).signIn(email, next)).statusCode, 303);
    });

    it('refuses a wrong current password and a short new one, changing nothing', async () => {
      const email = newEmail();
      const visitor = new Visitor(t.app);
      await visitor.signUp(email);
      await visitor.get('/portal/account');
      const wrong = await visitor.post('/portal/account/password', {
        current_password: 'not the password at all',
        new_password: 'a brand new long password',
      });
      assert.equal(wrong.statusCode, 401);
      assert.match(wrong.body, /This is not your password\./);
      const short = await visitor.post('/portal/account/password', {
        current_password: PASSWORD,
        new_password: 'short',
      });
      assert.equal(short.statusCode, 400);
      assert.match(short.body, /at least 12 characters/);
      const empty = await visitor.post('/portal/account/password', {});
      assert.equal(empty.statusCode, 400);
      assert.match(empty.body, /Enter your current password\./);
      const forged = await visitor.post(
        '/portal/account/password',
        { current_password: PASSWORD, new_password: 'a brand new long password' },
        { csrf: false },
      );
      assert.equal(forged.statusCode, 403);
      assert.equal((await new Visitor(t.app).signIn(email, PASSWORD)).statusCode, 303);
    });
  });

  describe('sessions', () => {
    it('ends the session on sign-out, for the old cookie too', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      const cookie = String(visitor.cookies.get('as_session'));
      await visitor.get('/portal/account');
      const out = await visitor.post('/portal/sign-out', {});
      assert.equal(out.statusCode, 303);
      assert.equal(out.headers.location, '/portal/sign-in?signed-out=1');
      assert.ok(!visitor.cookies.has('as_session'));
      const replay = new Visitor(t.app);
      replay.cookies.set('as_session', cookie);
      assert.equal((await replay.get('/portal/account')).statusCode, 303);
    });

    it('keeps only a hash of the session token, and refuses a cookie not signed by us', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      const signed = decodeURIComponent(String(visitor.cookies.get('as_session')));
      const token = signed.slice(0, signed.lastIndexOf('.'));
      const rows = await t.database.reader
        .selectFrom('portal_sessions')
        .select('id_hash')
        .execute();
      assert.ok(rows.length > 0);
      assert.ok(rows.every((r) => r.id_hash !== token && /^[0-9a-f]{64}$/.test(r.id_hash)));
      const unsigned = new Visitor(t.app);
      unsigned.cookies.set('as_session', token);
      assert.equal((await unsigned.get('/portal/account')).statusCode, 303);
    });

    it('sets the session cookie HttpOnly, SameSite=Lax, on /portal only', async () => {
      const visitor = new Visitor(t.app);
      await visitor.get('/portal/sign-up');
      const res = await visitor.post('/portal/sign-up', { email: newEmail(), password: PASSWORD });
      const setCookie = [res.headers['set-cookie']].flat().join('\n');
      const session = setCookie.split('\n').find((c) => c.startsWith('as_session='));
      assert.ok(session);
      assert.match(session, /HttpOnly/);
      assert.match(session, /SameSite=Lax/);
      assert.match(session, /Path=\/portal/);
      assert.doesNotMatch(session, /Secure/, 'development runs on plain http');
    });

    it('runs out after a week', async () => {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      assert.equal((await visitor.get('/portal/account')).statusCode, 200);
      now += 7 * 24 * 3_600_000 + 1_000;
      try {
        assert.equal((await visitor.get('/portal/account')).statusCode, 303);
      } finally {
        now = Date.now();
      }
    });
  });

  describe('bad input', () => {
    it('answers odd forms with a 4xx page, never a 500', async () => {
      const visitor = new Visitor(t.app);
      await visitor.get('/portal/sign-in');
      const cases: InjectOptions[] = [
        {
          method: 'POST',
          url: '/portal/sign-in',
          payload: `email=a&email=b&password=x&_csrf=${visitor.csrf}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
        {
          method: 'POST',
          url: '/portal/sign-in',
          payload: `_csrf=${visitor.csrf}&_csrf=${visitor.csrf}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
        {
          method: 'POST',
          url: '/portal/sign-in',
          payload: 'x'.repeat(20_000),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
        {
          method: 'POST',
          url: '/portal/sign-in',
          payload: '{"email":1}',
          headers: { 'content-type': 'application/json' },
        },
        {
          method: 'POST',
          url: '/portal/sign-in',
          payload: 'a',
          headers: { 'content-type': 'text/plain' },
        },
        { method: 'POST', url: '/portal/keys/%E0%A4%A/revoke' },
        { method: 'GET', url: `/portal/keys/${'k'.repeat(300)}/revoke` },
      ];
      const expected: Array<[number, boolean]> = [
        [400, true], // a repeated field reads as missing
        [403, true], // a repeated token is no token
        [413, true],
        [403, true], // JSON carries no token
        [400, true], // unsupported content type
        [400, false], // bad percent-encoding: refused before routing, as a JSON Error
        [400, false], // a path parameter past the router's limit: the same
      ];
      for (const [i, options] of cases.entries()) {
        const res = await visitor.send(options);
        const [status, page] = expected[i] ?? [0, false];
        assert.equal(res.statusCode, status, `case ${i}: ${res.body.slice(0, 200)}`);
        if (page) assert.match(res.body, /^<!doctype html>/, `case ${i}`);
      }
    });
  });
});

describe('developer portal in production', () => {
  let t: TestApp;
  before(async () => {
    // A clock that stands still, so a count of attempts never straddles a minute boundary.
    const now = new Date();
    t = await startApp({
      clock: { now: () => now },
      env: {
        ...PRODUCTION_ENV,
        TRUST_PROXY: '1',
      },
    });
  });
  after(() => t.close());

  it('marks cookies Secure, pins HTTPS, and sends the root to the docs', async () => {
    const visitor = new Visitor(t.app);
    const page = await visitor.send({
      url: '/portal/sign-up',
      headers: { 'x-forwarded-proto': 'https' },
    });
    assert.match(String(page.headers['strict-transport-security']), /max-age=31536000/);
    assert.match(String(page.headers['content-security-policy']), /upgrade-insecure-requests/);
    const res = await visitor.send({
      method: 'POST',
      url: '/portal/sign-up',
      payload: new URLSearchParams({
        email: newEmail(),
        password: PASSWORD,
        _csrf: visitor.csrf,
      }).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-proto': 'https',
      },
    });
    assert.equal(res.statusCode, 303);
    const cookies = [res.headers['set-cookie']].flat().join('\n');
    assert.match(cookies, /as_session=[^\n]*; Secure/);
    assert.match(String(page.headers['set-cookie']), /as_csrf=[^\n]*; Secure/);
    assert.equal((await t.app.inject({ url: '/' })).headers.location, '/docs/');
  });

  it('behind one proxy, takes the client address the proxy saw, not the one a client wrote', async () => {
    const proxy = freshIp();
    const client = '203.0.113.7';
    let status = 0;
    const limit = ADDRESS_FAILURE_LIMITS.perMinute;
    for (let i = 1; i <= limit + 1; i++) {
      const visitor = new Visitor(t.app, proxy);
      const headers = {
        'x-forwarded-proto': 'https',
        // The left part is the client's to invent; the right part is what our proxy added.
        'x-forwarded-for': `198.51.100.${i}, ${client}`,
      };
      await visitor.send({ url: '/portal/sign-in', headers });
      const res = await visitor.send({
        method: 'POST',
        url: '/portal/sign-in',
        payload: new URLSearchParams({
          email: newEmail(),
          password: 'a wrong password',
          _csrf: visitor.csrf,
        }).toString(),
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      });
      status = res.statusCode;
      if (i <= limit) assert.equal(status, 401, `attempt ${i}`);
    }
    assert.equal(status, 429);
  });
});
