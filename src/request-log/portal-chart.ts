import { type Html, html } from '../html.js';

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

type Counts = Omit<HourCounts, 'hour'>;

/** The plot's height in drawing units: the axis' top is 100, zero is 0. */
const HEIGHT = 100;
/**
 * The least height of a part of a bar that is not zero, in drawing units: the plot is 10rem
 * high (public/portal/portal.css), so 2 units are 3.2 px at the default text size. One request
 * on an axis of thousands is still seen.
 */
const MIN_PART = 2;
/** Hours in a day's column; a day's bar takes the middle of its column. */
const DAY = 24;
const DAY_BAR = { inset: 3, width: 18 };

/** A round number at or above `n` for the axis' top: 1, 2 or 5 times a power of ten. */
function axisTop(n: number): number {
  if (n <= 4) return 4;
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * power >= n) return step * power;
  return 10 * power;
}

const number = { format: (n: number) => n.toLocaleString('en-US') };
const total = (c: Counts) => c.status2xx + c.status4xx + c.status429 + c.status5xx;
const unit = (n: number) => n.toFixed(2).replace(/\.?0+$/, '');

/**
 * One stacked bar, bottom up, `top` the axis' top: each part not zero at least MIN_PART high
 * (a bar may so stand a little above the axis' top; the plot lets it).
 */
function bar(
  counts: Counts,
  top: number,
  x: number,
  width: number,
  className: string,
  when: string,
): Html[] {
  let base = HEIGHT;
  return SERIES.flatMap(({ key, label, className: series }) => {
    const n = counts[key];
    if (n === 0) return [];
    const height = Math.max(MIN_PART, (n / top) * HEIGHT);
    base -= height;
    return [
      html`<rect class="${[series, className].filter(Boolean).join(' ')}" x="${unit(x)}" y="${unit(base)}" width="${unit(width)}" height="${unit(height)}"><title>${when}: ${number.format(n)} ${label}</title></rect>`,
    ];
  });
}

/** The three figures of an axis, at its top, middle and zero, for the scale shown. */
function axis(top: number, className: string): Html {
  return html`<div class="chart-y ${className}" aria-hidden="true">${[top, top / 2, 0].map(
    (n) => html`<span>${number.format(n)}</span>`,
  )}</div>`;
}

/**
 * Requests as stacked bars (2xx, 4xx, 429, 5xx), drawn here: nothing is fetched from anywhere,
 * and no script runs. `hours` are consecutive, oldest first, the last one the current hour.
 *
 * The days are columns of equal width, today the last, shaded and labelled "Today". A bar per
 * hour where the screen is wide enough (40rem), a bar per day where it is not: 168 hours on a
 * phone are hairlines. The bars are an SVG stretched to the plot's box; its figures and labels
 * are text of the page, so they keep their size at every width (an SVG's own text shrinks with
 * it). The picture is described for screen readers (its title and totals), and the same totals
 * are in the legend, so nothing is told by colour alone.
 */
export function requestsChart(hours: readonly HourCounts[], title: string): Html {
  const days: Array<{ day: string; counts: Counts }> = [];
  for (const hour of hours) {
    const day = hour.hour.slice(0, 10);
    let last = days.at(-1);
    if (last?.day !== day) {
      last = { day, counts: { status2xx: 0, status4xx: 0, status429: 0, status5xx: 0 } };
      days.push(last);
    }
    for (const { key } of SERIES) last.counts[key] += hour[key];
  }
  const width = Math.max(1, days.length) * DAY;
  const hourTop = axisTop(Math.max(0, ...hours.map(total)));
  const dayTop = axisTop(Math.max(0, ...days.map((d) => total(d.counts))));
  const today = days.length - 1;
  const column = (hour: HourCounts) =>
    days.findIndex((d) => d.day === hour.hour.slice(0, 10)) * DAY + Number(hour.hour.slice(11, 13));

  const hourBars = hours.map((hour) =>
    bar(
      hour,
      hourTop,
      column(hour) + 0.1,
      0.8,
      hour.hour.startsWith(days[today]?.day ?? '-') ? 'today' : '',
      `${hour.hour.slice(0, 10)} ${hour.hour.slice(11, 13)}:00 UTC`,
    ),
  );
  const dayBars = days.map(({ day, counts }, i) =>
    bar(
      counts,
      dayTop,
      i * DAY + DAY_BAR.inset,
      DAY_BAR.width,
      i === today ? 'today' : '',
      `${day} (UTC${i === 0 && hours[0]?.hour.slice(11, 13) !== '00' ? `, from ${hours[0]?.hour.slice(11, 16)}` : ''})`,
    ),
  );
  // A line at the top, the middle and zero: the same places on either scale.
  const grid = [0, HEIGHT / 2, HEIGHT].map(
    (y) =>
      html`<line class="grid" x1="0" x2="${width}" y1="${y}" y2="${y}" vector-effect="non-scaling-stroke"></line>`,
  );
  const sums = Object.fromEntries(
    SERIES.map(({ key }) => [key, hours.reduce((sum, h) => sum + h[key], 0)]),
  ) as Record<(typeof SERIES)[number]['key'], number>;
  const all = hours.reduce((sum, h) => sum + total(h), 0);
  const todays = days[today] ? total(days[today].counts) : 0;
  const summary = `${number.format(all)} requests: ${SERIES.map(
    ({ key, label }) => `${number.format(sums[key])} ${label}`,
  ).join(', ')}; ${number.format(todays)} today.`;
  return html`<figure class="chart">
  <p class="chart-unit" aria-hidden="true"><span class="hourly">Requests per hour (UTC)</span><span class="daily">Requests per day (UTC)</span></p>
  <div class="chart-plot">
    ${axis(hourTop, 'hourly')}${axis(dayTop, 'daily')}
    <svg viewBox="0 0 ${width} ${HEIGHT}" preserveAspectRatio="none" role="img" aria-labelledby="chart-title chart-desc">
      <title id="chart-title">${title}</title>
      <desc id="chart-desc">${summary}</desc>
      ${today >= 0 && html`<rect class="today-band" x="${today * DAY}" y="0" width="${DAY}" height="${HEIGHT}"></rect>`}
      ${grid}
      <g class="hourly">${hourBars}</g>
      <g class="daily">${dayBars}</g>
    </svg>
    <ol class="chart-x" aria-hidden="true">${days.map(({ day }, i) =>
      i === today
        ? html`<li class="today" title="${day}">Today</li>`
        : html`<li title="${day}">${day.slice(5)}</li>`,
    )}</ol>
  </div>
  <figcaption>
    <ul class="legend">${SERIES.map(
      ({ key, label, className }) =>
        html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="${className}" width="10" height="10"></rect></svg> ${label}: ${number.format(sums[key])}</li>`,
    )}<li class="today-total">Today: ${number.format(todays)}</li></ul>
  </figcaption>
</figure>`;
}
