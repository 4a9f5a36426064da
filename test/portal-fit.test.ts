/**
 * The portal's pages say what is true and fit what they show (issue 54): the chart shows today
 * however little happened.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HourCounts, requestsChart } from '../src/request-log/portal-chart.js';

describe('portal: the requests chart', () => {
  /** 48 hours from 01:00 UTC: the last is the first hour of a third day, today. */
  const hours: HourCounts[] = Array.from({ length: 48 }, (_, i) => ({
    hour: new Date(Date.UTC(2026, 10, 24, 1 + i)).toISOString(),
    status2xx: i === 0 ? 5000 : 0,
    status4xx: 0,
    status429: 0,
    status5xx: i === 47 ? 1 : 0,
  }));
  const chart = requestsChart(hours, 'Three days').value;

  it('draws a day a column, today the last, shaded and labelled from its first hour on', () => {
    assert.match(chart, /<svg viewBox="0 0 72 100" preserveAspectRatio="none"/);
    assert.match(chart, /<rect class="today-band" x="48" y="0" width="24" height="100">/);
    assert.match(
      chart,
      /<li title="2026-11-24">11-24<\/li><li title="2026-11-25">11-25<\/li><li class="today" title="2026-11-26">Today<\/li>/,
    );
    assert.match(chart, /<li class="today-total">Today: 1<\/li>/);
    assert.match(
      chart,
      /<desc id="chart-desc">5,001 requests: 5,000 2xx, 0 4xx, 0 429, 1 5xx; 1 today\.<\/desc>/,
    );
  });

  it('draws one request beside thousands at a height that is seen, on either scale', () => {
    for (const scale of ['hourly', 'daily']) {
      const bars = new RegExp(`<g class="${scale}">(.*?)</g>`, 's').exec(chart)?.[1] ?? '';
      const today =
        /<rect class="bar-server today" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)">/.exec(
          bars,
        );
      assert.ok(today, `${scale}: today's bar is drawn`);
      assert.ok(Number(today[1]) >= 2, `${scale}: today's bar is ${today[1]} units high`);
    }
  });

  it('keeps its figures and labels out of the SVG, so they keep their size', () => {
    const svg = /<svg viewBox[^>]*>(.*?)<\/svg>/s.exec(chart)?.[1] ?? '';
    assert.doesNotMatch(svg, /<text/);
    assert.match(chart, /<div class="chart-y hourly" aria-hidden="true"><span>5,000<\/span>/);
  });
});
