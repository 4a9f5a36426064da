import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { freshIp } from './helpers.js';

/**
 * One browser's view of the portal over app.inject: it keeps the cookies it is given, sends
 * them back, and remembers the CSRF token of the last page it read.
 */
export class Visitor {
  readonly cookies = new Map<string, string>();
  csrf = '';
  /** The idempotency key of the last page's form, sent with its fields as a browser does. */
  formKey = '';

  constructor(
    private readonly app: FastifyInstance,
    readonly ip = freshIp(),
  ) {}

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.send({ method: 'GET', url });
  }

  /** Posts a form the way a browser does, with the page's CSRF token unless told otherwise. */
  async post(
    url: string,
    fields: Record<string, string | string[]> = {},
    options: { csrf?: boolean; formKey?: string } = {},
  ): Promise<LightMyRequestResponse> {
    // A field given as a list is sent once per value, as ticked checkboxes are.
    const form = new URLSearchParams(
      Object.entries(fields).flatMap(([name, value]) =>
        (Array.isArray(value) ? value : [value]).map((one): [string, string] => [name, one]),
      ),
    );
    if (options.csrf !== false) form.set('_csrf', this.csrf);
    const formKey = options.formKey ?? this.formKey;
    if (formKey) form.set('idempotency_key', formKey);
    return this.send({
      method: 'POST',
      url,
      payload: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  }

  async send(options: InjectOptions): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await this.app.inject({
      remoteAddress: this.ip,
      ...options,
      headers: { ...(cookie && { cookie }), ...options.headers },
    });
    for (const c of res.cookies as Array<{ name: string; value: string; expires?: Date }>) {
      if (c.value === '' || (c.expires && c.expires.getTime() < Date.now())) {
        this.cookies.delete(c.name);
      } else {
        this.cookies.set(c.name, c.value);
      }
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1];
    if (token) this.csrf = token;
    this.formKey = /name="idempotency_key" value="([^"]+)"/.exec(res.body)?.[1] ?? '';
    return res;
  }

  async signUp(
    email: string,
    password = 'a long enough password',
  ): Promise<LightMyRequestResponse> {
    await this.get('/portal/sign-up');
    return this.post('/portal/sign-up', { email, password });
  }

  async signIn(email: string, password: string): Promise<LightMyRequestResponse> {
    await this.get('/portal/sign-in');
    return this.post('/portal/sign-in', { email, password });
  }
}
