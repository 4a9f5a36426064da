import type { Page } from 'playwright-core';

/** Chromium's own background traffic off, so that what is recorded is the page's. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Every request a page makes that leaves `origin`, and every GET answered 4xx/5xx (a missing
 * asset; a form refused on purpose is a POST). */
export function recordRequests(page: Page, origin: string) {
  const away: string[] = [];
  const failed: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    // data: and blob: URLs are the page's own memory, not the network.
    if (url.protocol === 'data:' || url.protocol === 'blob:') return;
    if (url.origin !== origin) away.push(`${request.method()} ${request.url()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400 && response.request().method() === 'GET')
      failed.push(`${response.status()} ${response.url()}`);
  });
  page.on('requestfailed', (request) => {
    failed.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
  });
  return { away, failed };
}
