import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStats } from '../bounded-cache.js';
import type { PoolStats } from '../store/database.js';
import type { Dependency, OutageObserver } from './outages.js';

export interface MetricSources {
  /** The PostgreSQL pool (undefined on SQLite). */
  pool: () => PoolStats | undefined;
}

/** Cache metrics: each counts or measures one thing of every cache, labelled by its name. */
const CACHE_METRICS = [
  ['cache_hits_total', 'Lookups a cache answered, by cache.', (c: CacheStats) => c.hits],
  [
    'cache_misses_total',
    'Lookups a cache could not answer (absent or stale), by cache.',
    (c: CacheStats) => c.misses,
  ],
  [
    'cache_evictions_total',
    'Entries a cache let go to make room, by cache.',
    (c: CacheStats) => c.evictions,
  ],
] as const;

const STRAY_TOTALS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * The Prometheus metrics of one app instance, in a registry of its own (tests build many apps in
 * one process). Request metrics are labelled by route pattern, never by raw URL, so the series
 * count stays bounded whatever clients send.
 */
export class Metrics implements OutageObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly duration: Histogram<'method' | 'route' | 'status'>;
  private readonly rejections: Counter<'reason'>;
  private readonly outcomes: Counter<'outcome'>;
  private readonly deprecated: Counter<'operation'>;
  private readonly webhookOutcomes: Counter<'outcome'>;
  private readonly outages: Counter<'dependency'>;
  private readonly up: Gauge<'dependency'>;
  private readonly logWritten: Counter;
  private readonly logDropped: Counter<'reason'>;
  /** Entries the request log holds, not yet written (RequestLog, once it exists). */
  private logBuffered: () => number = () => 0;
  // One child per label set, so a request costs no label hashing after the first of its kind.
  private readonly children = new Map<string, { count: Counter; seconds: Histogram }>();
  /** The instance's caches, each told by its owner (`watch`), read at scrape time. */
  private readonly caches: Array<() => Iterable<CacheStats>> = [];

  /**
   * @param processMetrics Node's process metrics (event-loop lag, GC, heap…): they watch the process
   *   all the time, so only where someone can read them.
   */
  constructor(sources: MetricSources, processMetrics = true) {
    const registers = [this.registry];
    if (processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters, which Prometheus' own checks refuse (`promtool check
      // metrics`); nodejs_active_handles and its kin say the same, by type.
      for (const name of STRAY_TOTALS) this.registry.removeSingleMetric(name);
    }
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers });
    this.requests = counter(
      'http_requests_total',
      'HTTP requests answered, by method, route pattern and status.',
      ['method', 'route', 'status'],
    );
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request received to response sent, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.rejections = counter(
      'rate_limit_rejections_total',
      'Requests refused by the rate limiter: rate_limited (window full) or key_banned.',
      ['reason'],
    );
    this.outcomes = counter(
      'messages_processed_total',
      'Message deliveries by outcome: sent, retry (will be tried again), failed, lost (lease expired first).',
      ['outcome'],
    );
    this.webhookOutcomes = counter(
      'webhook_deliveries_total',
      'Webhook delivery attempts by outcome: delivered (2xx), retry (will be tried again), failed (gave up), lost (lease expired first).',
      ['outcome'],
    );
    this.deprecated = counter(
      'deprecated_calls_total',
      'Calls to deprecated operations, by operation id.',
      ['operation'],
    );
    this.outages = counter(
      'dependency_outages_total',
      'Outages of a dependency (database, redis) this instance noticed: it stopped answering.',
      ['dependency'],
    );
    this.up = new Gauge({
      name: 'dependency_up',
      help: 'Whether a dependency (database, redis) answers, as this instance last found it: 1 or 0 (0 until it first answers).',
      labelNames: ['dependency'],
      registers,
    });
    this.logWritten = counter(
      'request_log_written_total',
      'Request log entries written to the store.',
      [],
    );
    this.logDropped = counter(
      'request_log_dropped_total',
      'Request log entries dropped: buffer_full (the buffer held REQUEST_LOG_BUFFER entries), write_failed (their batch could not be written, or one of its entries encoded), closed (answered after the log closed).',
      ['reason'],
    );
    const metrics = this;
    new Gauge({
      name: 'request_log_buffered',
      help: 'Request log entries held in memory, not yet written.',
      registers,
      collect() {
        this.set(metrics.logBuffered());
      },
    });
    const caches = () => this.caches.flatMap((source) => [...source()]);
    for (const [name, help, read] of CACHE_METRICS) {
      new Counter({
        name,
        help,
        labelNames: ['cache'],
        registers,
        collect() {
          this.reset();
          for (const cache of caches()) this.inc({ cache: cache.name }, read(cache));
        },
      });
    }
    new Gauge({
      name: 'cache_entries',
      help: 'Entries a cache holds, by cache.',
      labelNames: ['cache'],
      registers,
      collect() {
        for (const cache of caches()) this.set({ cache: cache.name }, cache.entries);
      },
    });
    const pool = sources.pool;
    if (pool()) {
      new Gauge({
        name: 'db_pool_connections',
        help: 'PostgreSQL pool connections by state: busy, idle, and queries waiting for one.',
        labelNames: ['state'],
        registers,
        collect() {
          const stats = pool() ?? { total: 0, idle: 0, waiting: 0 };
          this.set({ state: 'busy' }, stats.total - stats.idle);
          this.set({ state: 'idle' }, stats.idle);
          this.set({ state: 'waiting' }, stats.waiting);
        },
      });
    }
  }

  /** Adds caches to those /metrics shows (`cache_*{cache="…"}`), read at each scrape. */
  watch(caches: () => Iterable<CacheStats>): void {
    this.caches.push(caches);
  }

  request(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let child = this.children.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      child = {
        count: this.requests.labels(labels) as unknown as Counter,
        seconds: this.duration.labels(labels) as unknown as Histogram,
      };
      this.children.set(key, child);
    }
    child.count.inc();
    child.seconds.observe(seconds);
  }

  rejected(reason: 'rate_limited' | 'key_banned'): void {
    this.rejections.inc({ reason });
  }

  processed(outcome: 'sent' | 'retry' | 'failed' | 'lost'): void {
    this.outcomes.inc({ outcome });
  }

  webhookDelivery(outcome: 'delivered' | 'retry' | 'failed' | 'lost'): void {
    this.webhookOutcomes.inc({ outcome });
  }

  dependencyUnheard(dependency: Dependency): void {
    this.up.set({ dependency }, 0);
  }

  dependencyDown(dependency: Dependency): void {
    this.outages.inc({ dependency });
    this.up.set({ dependency }, 0);
  }

  dependencyUp(dependency: Dependency): void {
    this.up.set({ dependency }, 1);
  }

  /** Where the request log's buffered entries are counted, for `request_log_buffered`. */
  watchRequestLog(buffered: () => number): void {
    this.logBuffered = buffered;
  }

  /**
   * A gauge a capability reads from the store at each scrape (a queue's depth, its oldest
   * item's age). During a database outage the scrape still answers, with the last value read.
   */
  storeGauge(name: string, help: string, read: () => Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const value = await read().catch(() => undefined);
        if (value !== undefined) this.set(value);
      },
    });
  }

  requestLogWritten(entries: number): void {
    this.logWritten.inc(entries);
  }

  requestLogDropped(reason: 'buffer_full' | 'write_failed' | 'closed', entries = 1): void {
    this.logDropped.inc({ reason }, entries);
  }

  deprecatedCall(operation: string): void {
    this.deprecated.inc({ operation });
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
