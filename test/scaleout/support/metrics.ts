import { METRICS_SCOPE, QUERY, ROUTES } from '../../../src/protocol/index.js';
import { BUS_SERIES, type BusCounterKey } from '../../../src/server/bus-metrics.js';
import { rest } from './rest.js';

/** One scrape of GET /metrics: sample lines by metric name. */
export class Scrape {
  private readonly samples: { name: string; labels: Record<string, string>; value: number }[] = [];

  constructor(text: string) {
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
      if (!m || m[1] === undefined || m[3] === undefined) throw new Error(`not a Prometheus sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        if (l[1] !== undefined && l[2] !== undefined) labels[l[1]] = l[2];
      }
      this.samples.push({ name: m[1], labels, value: Number(m[3]) });
    }
  }

  /** Sum of a metric's samples (all label sets, or those matching `labels`); throws if it has none. */
  value(name: string, labels: Record<string, string> = {}): number {
    const hits = this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (hits.length === 0) throw new Error(`metric ${name}${JSON.stringify(labels)} not in the scrape`);
    return hits.reduce((sum, s) => sum + s.value, 0);
  }

  /** A counter of the reliable bus, by its BusStats name (the series BUS_SERIES maps it to). */
  bus(counter: BusCounterKey): number {
    const series = BUS_SERIES[counter];
    return this.value(series.metric, series.labels);
  }

  /** Every resync wake-up of the bus, whatever the reason. */
  get resyncs(): number {
    return this.value(BUS_SERIES.resyncs_gap.metric);
  }

  get fills(): number {
    return this.value('fleetplane_watch_fill_queries_total');
  }

  get catchUps(): number {
    return this.value('fleetplane_watch_catchup_queries_total');
  }
}

export function scrape(base: string): Promise<Scrape> {
  return scrapePath(base, ROUTES.metrics);
}

/** Only the answering process's metrics (one worker's under `--workers`). */
export function scrapeProcess(base: string): Promise<Scrape> {
  return scrapePath(base, `${ROUTES.metrics}?${QUERY.scope}=${METRICS_SCOPE.process}`);
}

async function scrapePath(base: string, path: string): Promise<Scrape> {
  const res = await rest(base, 'GET', path);
  if (res.status !== 200) throw new Error(`GET ${base}${path}: ${res.status} ${res.text.slice(0, 200)}`);
  return new Scrape(res.text);
}
