import { PASSWORD_MIN_LENGTH } from '../../domain/accounts.js';
import { type Html, html } from '../../html.js';
import {
  csrfField,
  field,
  layout,
  type Notice,
  noticeBlock,
  onceField,
  type PageContext,
} from './layout.js';

export interface CredentialsForm {
  email?: string;
  notice?: Notice;
  errors?: { email?: string; password?: string };
}

export function signInPage(context: PageContext, form: CredentialsForm = {}): Html {
  return layout(
    { ...context, current: 'sign-in' },
    'Sign in',
    html`${noticeBlock(form.notice)}
<form method="post" action="/portal/sign-in" class="card" novalidate>
  ${csrfField(context.csrf)}
  ${field({
    name: 'email',
    label: 'Email',
    type: 'email',
    autocomplete: 'username',
    value: form.email,
    required: true,
    error: form.errors?.email,
  })}
  ${field({
    name: 'password',
    label: 'Password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
    error: form.errors?.password,
  })}
  <button type="submit">Sign in</button>
</form>
<p>No account yet? <a href="/portal/sign-up">Create one</a>; it is free.</p>`,
  );
}

export function signUpPage(context: PageContext, form: CredentialsForm = {}): Html {
  return layout(
    { ...context, current: 'sign-up' },
    'Create an account',
    html`<p>An account holds your pets, categories and orders, and the API keys that reach them.
It starts on the Free plan.</p>
${noticeBlock(form.notice)}
<form method="post" action="/portal/sign-up" class="card" novalidate>
  ${csrfField(context.csrf)}
  ${onceField()}
  ${field({
    name: 'email',
    label: 'Email',
    type: 'email',
    autocomplete: 'email',
    value: form.email,
    required: true,
    maxLength: 254,
    error: form.errors?.email,
  })}
  ${field({
    name: 'password',
    label: 'Password',
    type: 'password',
    autocomplete: 'new-password',
    hint: `At least ${PASSWORD_MIN_LENGTH} characters. A few unrelated words make a good one.`,
    required: true,
    minLength: PASSWORD_MIN_LENGTH,
    error: form.errors?.password,
  })}
  <button type="submit">Create account</button>
</form>
<p>Already have an account? <a href="/portal/sign-in">Sign in</a>.</p>`,
  );
}
