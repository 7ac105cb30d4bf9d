import { Gauge, type Registry } from 'prom-client';

/** A gauge read when scraped, and where its value comes from. */
export interface ScrapedGauge {
  readonly gauge: Gauge;
  /** Sets the source; until then the gauge reads 0. */
  readFrom(source: () => number): void;
}

/**
 * A gauge whose value is read from its source at scrape time, for values
 * that change per event (a status, a byte queued): setting it on every
 * change would cost a call per event for a value read every few seconds.
 */
export function scrapedGauge(config: { name: string; help: string; registers: Registry[] }): ScrapedGauge {
  let source = (): number => 0;
  const gauge = new Gauge({
    ...config,
    collect() {
      this.set(source());
    },
  });
  return {
    gauge,
    readFrom(read) {
      source = read;
    },
  };
}
