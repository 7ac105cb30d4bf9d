import { describe, expect, it } from 'vitest';
import { median, percentile, spread, summarize } from '../../src/bench/stats.js';
import { promValue } from '../../src/bench/prom-text.js';

describe('bench statistics', () => {
  it('takes nearest-rank percentiles and medians, ignoring NaN', () => {
    const v = [5, 1, 4, 2, 3, Number.NaN];
    expect(percentile(v, 50)).toBe(3);
    expect(percentile(v, 100)).toBe(5);
    expect(percentile(v, 1)).toBe(1);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
  });

  it('summarizes every field of the runs as median, min and max', () => {
    expect(spread([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3 });
    expect(summarize([{ a: 1, b: 10 }, { a: 3, b: 30 }, { a: 2, b: 20 }])).toEqual({
      a: { median: 2, min: 1, max: 3 },
      b: { median: 20, min: 10, max: 30 },
    });
  });
});

describe('Prometheus text', () => {
  const text = [
    '# HELP fleetplane_db_queries_total Database queries.',
    'fleetplane_db_queries_total{statement="select",ok="true"} 11',
    'fleetplane_db_queries_total{statement="insert",ok="true"} 7',
    'fleetplane_db_queries_total_extra 1000',
    'fleetplane_process_cpu_seconds_total 3.5',
  ].join('\n');

  it('sums a metric over its label sets, or one label set, and nothing that only starts with its name', () => {
    expect(promValue(text, 'fleetplane_db_queries_total')).toBe(18);
    expect(promValue(text, 'fleetplane_db_queries_total', { statement: 'insert' })).toBe(7);
    expect(promValue(text, 'fleetplane_process_cpu_seconds_total')).toBe(3.5);
    expect(Number.isNaN(promValue(text, 'missing_total'))).toBe(true);
  });
});
