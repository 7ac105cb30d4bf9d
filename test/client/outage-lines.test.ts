import { describe, expect, it } from 'vitest';
import { OutageLines } from '../../src/cli/ctl/describe-error.js';

describe('OutageLines', () => {
  it('says an outage once when it starts and once when it ends, with the attempts counted', () => {
    const lines: string[] = [];
    let now = 1_000;
    const outage = new OutageLines((l) => lines.push(l), () => now);
    outage.back();
    expect(lines).toEqual([]);
    for (let i = 0; i < 88; i++) {
      outage.retrying(2_000, new Error('fetch failed'));
      now += 2_045;
    }
    expect(lines).toEqual(['reconnecting… (next try in 2.0s): fetch failed\n']);
    outage.back();
    expect(lines[1]).toBe('reconnected after 88 attempts, 180.0s\n');
    // The next outage is told afresh, with its last reason when it changed.
    outage.retrying(500, new Error('fetch failed'));
    outage.retrying(500, new Error('revision_compacted'));
    outage.back();
    expect(lines.slice(2)).toEqual(['reconnecting… (next try in 0.5s): fetch failed\n', 'reconnected after 2 attempts, 0.0s; last: revision_compacted\n']);
  });
});
