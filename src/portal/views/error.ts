import type { ApiError } from '../../errors.js';
import { type Html, html } from '../../html.js';
import { layout, type PageContext } from './layout.js';

const TITLES: Record<number, string> = {
  403: 'Form expired',
  404: 'Page not found',
  429: 'Too many requests',
};

/** Any failure on a portal page, in the words of the error table. */
export function errorPage(context: PageContext, error: ApiError): Html {
  const title =
    TITLES[error.status] ?? (error.status >= 500 ? 'Something went wrong' : 'Request refused');
  return layout(
    context,
    title,
    html`<p role="alert">${error.message}</p>
<p class="muted">Error <code>${error.code}</code> (HTTP ${error.status}).</p>
<p><a href="/portal">Back to the portal</a></p>`,
  );
}
