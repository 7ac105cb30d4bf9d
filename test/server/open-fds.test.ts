import { afterEach, describe, expect, it } from 'vitest';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { openFileDescriptors } from '../../src/server/open-fds.js';
import { Metrics } from '../../src/server/metrics.js';

const linux = process.platform === 'linux';

describe.runIf(linux)('process_open_fds', () => {
  const opened: number[] = [];
  afterEach(() => {
    for (const fd of opened.splice(0)) closeSync(fd);
  });

  it('counts every open descriptor, as listing /proc/self/fd does', () => {
    const before = openFileDescriptors();
    for (let i = 0; i < 37; i++) opened.push(openSync('/dev/null', 'r'));
    const after = openFileDescriptors();
    expect(before).toBeDefined();
    expect(after).toBe((before ?? 0) + 37);
    expect(after).toBe(readdirSync('/proc/self/fd').length - 1);
  });

  it('is what the server exposes, once', async () => {
    const m = new Metrics({ processMetrics: true });
    for (let i = 0; i < 5; i++) opened.push(openSync('/dev/null', 'r'));
    const text = await m.registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('process_open_fds '));
    expect(lines).toHaveLength(1);
    expect(Number(lines[0]?.split(' ')[1])).toBe(readdirSync('/proc/self/fd').length - 1);
  });
});
