import { randomUUID } from 'node:crypto';
import type { Account } from '../../domain/accounts.js';
import { Html, html } from '../../html.js';
import { FORM_KEY_FIELD } from '../../http/idempotency.js';

export interface Notice {
  kind: 'error' | 'success';
  text: string;
}

export interface PageContext {
  /** The signed-in account, or undefined on the signed-out pages. */
  account: Account | undefined;
  /** A CSRF token for the page's forms (sign-out included). */
  csrf: string;
  /** Which navigation entry is the current page. */
  current?: 'account' | 'keys' | 'webhooks' | 'requests' | 'sign-in' | 'sign-up';
}

export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

/** A form that creates something acts once however often it is sent (a double click, a page
 * sent again): each rendering carries a key of its own (IdempotentAnswers.form). */
export function onceField(): Html {
  return html`<input type="hidden" name="${FORM_KEY_FIELD}" value="${randomUUID()}">`;
}

function navLink(href: string, label: string, current: boolean): Html {
  return html`<a href="${href}"${current ? new Html(' aria-current="page"') : ''}>${label}</a>`;
}

function navigation({ account, csrf, current }: PageContext): Html {
  const entries = account
    ? html`
        <li>${navLink('/portal/account', 'Account', current === 'account')}</li>
        <li>${navLink('/portal/keys', 'API keys', current === 'keys')}</li>
        <li>${navLink('/portal/webhooks', 'Webhooks', current === 'webhooks')}</li>
        <li>${navLink('/portal/requests', 'Requests', current === 'requests')}</li>
        <li><a href="/docs/">API docs</a></li>
        ${
          // A page without a CSRF token (a refusal) has no form.
          csrf === ''
            ? html``
            : html`<li>
          <form method="post" action="/portal/sign-out">
            ${csrfField(csrf)}
            <button type="submit" class="link">Sign out</button>
          </form>
        </li>`
        }`
    : html`
        <li><a href="/docs/">API docs</a></li>
        <li>${navLink('/portal/sign-in', 'Sign in', current === 'sign-in')}</li>
        <li>${navLink('/portal/sign-up', 'Create account', current === 'sign-up')}</li>`;
  return html`<nav aria-label="Portal"><ul>${entries}</ul></nav>`;
}

export function noticeBlock(notice: Notice | undefined): Html {
  if (!notice) return html``;
  // Errors interrupt (role=alert); confirmations are announced politely (role=status).
  const role = notice.kind === 'error' ? 'alert' : 'status';
  return html`<p class="notice ${notice.kind}" role="${role}">${notice.text}</p>`;
}

/**
 * The page around every portal view: head, skip link, header with navigation, main. A `wide`
 * page (a list in a table) takes more of a large screen, so its columns need not wrap; its prose
 * keeps the measure of the others (public/portal/portal.css).
 */
export function layout(
  context: PageContext,
  title: string,
  body: Html,
  options: { wide?: boolean } = {},
): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Animal Store developer portal</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/portal/assets/portal.css">
<script src="/portal/assets/portal.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/portal">Animal Store <span>developers</span></a>
  ${navigation(context)}
</header>
<main id="main" tabindex="-1"${options.wide ? new Html(' class="wide"') : ''}>
<h1>${title}</h1>
${body}
</main>
<footer class="bottom">
  <p>Animal Store API · <a href="/docs/">Reference</a> · <a href="/v1/openapi.json">OpenAPI</a></p>
</footer>
</body>
</html>
`;
}

export interface FieldOptions {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password';
  value?: string;
  autocomplete?: string;
  hint?: string;
  error?: string;
  required?: boolean;
  minLength?: number;
  maxLength?: number;
}

/** A labelled input with its hint and error tied to it for screen readers. */
export function field(options: FieldOptions): Html {
  const id = `field-${options.name}`;
  const described = [options.hint && `${id}-hint`, options.error && `${id}-error`]
    .filter(Boolean)
    .join(' ');
  const attributes = [
    options.autocomplete && html` autocomplete="${options.autocomplete}"`,
    options.value !== undefined && html` value="${options.value}"`,
    options.required && html` required`,
    options.minLength !== undefined && html` minlength="${options.minLength}"`,
    options.maxLength !== undefined && html` maxlength="${options.maxLength}"`,
    described && html` aria-describedby="${described}"`,
    options.error && html` aria-invalid="true"`,
  ];
  return html`<div class="field">
  <label for="${id}">${options.label}</label>
  ${options.hint && html`<p class="hint" id="${id}-hint">${options.hint}</p>`}
  ${options.error && html`<p class="field-error" id="${id}-error">${options.error}</p>`}
  <input id="${id}" name="${options.name}" type="${options.type ?? 'text'}"${attributes}>
</div>`;
}

/** A timestamp as people read it, in UTC, with the machine form kept in the markup. */
export function time(iso: string | null, never = 'Never'): Html {
  if (iso === null) return html`${never}`;
  // A narrow column breaks it between the date and the time, nowhere else (public/portal/portal.css).
  return html`<time datetime="${iso}"><span>${iso.slice(0, 10)}</span> <span>${iso.slice(11, 16)} UTC</span></time>`;
}
