import { type Html, html } from '../portal/html.js';

/** One hour's requests, split as the chart stacks them (the log's hourly counts). */
export interface HourCounts {
  /** The hour's start (UTC, ISO 8601). */
  hour: string;
  status2xx: number;
  /** 4xx answers but 429. */
  status4xx: number;
  status429: number;
  status5xx: number;
}

const SERIES = [
  { key: 'status2xx', label: '2xx', className: 'bar-ok' },
  { key: 'status4xx', label: '4xx', className: 'bar-client' },
  { key: 'status429', label: '429', className: 'bar-limited' },
  { key: 'status5xx', label: '5xx', className: 'bar-server' },
] as const;

const WIDTH = 720;
const HEIGHT = 200;
const LEFT = 44;
const BOTTOM = 22;
const TOP = 8;

/** A round number at or above `n` for the axis' top: 1, 2 or 5 times a power of ten. */
function axisTop(n: number): number {
  if (n <= 4) return 4;
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * power >= n) return step * power;
  return 10 * power;
}

const number = { format: (n: number) => n.toLocaleString('en-US') };

/**
 * Requests per hour as stacked bars (2xx, 4xx, 429, 5xx), drawn here as SVG: nothing is
 * fetched from anywhere, and no script runs. `hours` are consecutive and oldest first. The
 * picture is described for screen readers (its title and totals), and the same totals are in
 * the legend, so nothing is told by colour alone.
 */
export function requestsChart(hours: readonly HourCounts[], title: string): Html {
  const total = (h: HourCounts) => h.status2xx + h.status4xx + h.status429 + h.status5xx;
  const top = axisTop(Math.max(0, ...hours.map(total)));
  const plotWidth = WIDTH - LEFT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const step = plotWidth / Math.max(1, hours.length);
  const barWidth = Math.max(1, step - (step > 3 ? 1 : 0));
  const y = (n: number) => TOP + plotHeight - (n / top) * plotHeight;
  const sums = Object.fromEntries(
    SERIES.map(({ key }) => [key, hours.reduce((sum, h) => sum + h[key], 0)]),
  ) as Record<(typeof SERIES)[number]['key'], number>;
  const all = hours.reduce((sum, h) => sum + total(h), 0);

  const bars = hours.map((hour, i) => {
    let base = 0;
    const x = (LEFT + i * step).toFixed(1);
    return SERIES.map(({ key, className }) => {
      const n = hour[key];
      if (n === 0) return '';
      const from = y(base);
      base += n;
      const to = y(base);
      return html`<rect class="${className}" x="${x}" y="${to.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0.5, from - to).toFixed(1)}"><title>${hour.hour.slice(0, 13)}:00 UTC: ${number.format(n)} ${SERIES.find((s) => s.key === key)?.label}</title></rect>`;
    });
  });
  // A line and a label at the top, the middle and zero.
  const grid = [0, top / 2, top].map(
    (n) =>
      html`<line class="grid" x1="${LEFT}" x2="${WIDTH}" y1="${y(n).toFixed(1)}" y2="${y(n).toFixed(1)}"></line><text class="axis" x="${LEFT - 6}" y="${(y(n) + 4).toFixed(1)}" text-anchor="end">${number.format(n)}</text>`,
  );
  // Each day's first hour is labelled with the day, where the label fits before the edge.
  const days = hours.flatMap((hour, i) =>
    hour.hour.slice(11, 13) === '00' && LEFT + i * step + 34 <= WIDTH
      ? [
          html`<text class="axis" x="${(LEFT + i * step).toFixed(1)}" y="${HEIGHT - 6}">${hour.hour.slice(5, 10)}</text>`,
        ]
      : [],
  );
  const summary = `${number.format(all)} requests: ${SERIES.map(
    ({ key, label }) => `${number.format(sums[key])} ${label}`,
  ).join(', ')}.`;
  return html`<figure class="chart">
  <svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-title chart-desc">
    <title id="chart-title">${title}</title>
    <desc id="chart-desc">${summary}</desc>
    ${grid}${bars}${days}
  </svg>
  <figcaption>
    <ul class="legend">${SERIES.map(
      ({ key, label, className }) =>
        html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="${className}" width="10" height="10"></rect></svg> ${label}: ${number.format(sums[key])}</li>`,
    )}</ul>
  </figcaption>
</figure>`;
}
