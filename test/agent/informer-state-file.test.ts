/**
 * The agent's informer state file (format, checks, size bound, atomic
 * replacement) and when it is written (InformerStateSaver).
 */
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { INFORMER_STATE_FILE, InformerStateFile } from '../../src/agent/sync/informer-state-file.js';
import { encodeInformerState, INFORMER_STATE_VERSION, type InformerStateOwner } from '../../src/agent/sync/informer-state-format.js';
import { InformerStateSaver } from '../../src/agent/sync/informer-state-saver.js';
import type { DeviceObject, InformersState } from '../../src/client/index.js';
import { tempDir, until } from './support/harness.js';

const OWNER: InformerStateOwner = { server: 'http://127.0.0.1:8080', organizationId: '6f1c0e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b' };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function capturedLogger() {
  const lines: Array<{ level: number; msg: string; reason?: string }> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { logger, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

function device(id: string, revision: number, hostname = id): DeviceObject {
  return { id, revision, hostname } as DeviceObject;
}

/** A state at `revision` with `n` devices. */
function stateAt(revision: number, n = 2): InformersState {
  const devices = Array.from({ length: n }, (_, i) => device(`d${i}`, Math.min(revision, i + 1), `host-${i}`));
  return {
    device: { revision, atTail: true, objects: devices },
    'security-group': { revision, atTail: true, objects: [] },
  };
}

async function fixture(maxBytes?: number) {
  const dir = await tempDir('fp-informer-state-');
  cleanups.push(dir.remove);
  const log = capturedLogger();
  const file = new InformerStateFile({ dir: dir.path, owner: OWNER, logger: log.logger, ...(maxBytes === undefined ? {} : { maxBytes }) });
  return { dir: dir.path, file, log };
}

describe('InformerStateFile', () => {
  it('saves atomically (0600, no temporary file left) and loads the same state back', async () => {
    const { dir, file } = await fixture();
    expect(await file.save(stateAt(7))).toBe('written');
    expect(await file.load()).toEqual(stateAt(7));
    expect((await stat(file.path)).mode & 0o777).toBe(0o600);
    expect(await file.save(stateAt(9))).toBe('written');
    expect(await file.load()).toEqual(stateAt(9));
    expect(await readdir(dir)).toEqual([INFORMER_STATE_FILE]);
  });

  it('ignores, with one log line each, a missing file, another server or organization, another version, an altered payload', async () => {
    const { file, log } = await fixture();
    expect(await file.load()).toBeUndefined();
    expect(log.lines.at(-1)?.msg).toMatch(/no saved informer state/);

    const cases: Array<[string, RegExp]> = [
      [encodeInformerState(stateAt(3), { ...OWNER, server: 'http://elsewhere:8080' }, new Date()), /saved for server/],
      [encodeInformerState(stateAt(3), { ...OWNER, organizationId: '00000000-0000-4000-8000-000000000000' }, new Date()), /saved for organization/],
      [encodeInformerState(stateAt(3), OWNER, new Date()).replace(`"version":${INFORMER_STATE_VERSION}`, '"version":99'), /format version 99/],
      [encodeInformerState(stateAt(3), OWNER, new Date()).replace('host-1', 'host-X'), /does not match its digest/],
      ['', /no header line/],
    ];
    for (const [content, reason] of cases) {
      await writeFile(file.path, content);
      const before = log.warnings().length;
      expect(await file.load()).toBeUndefined();
      expect(log.warnings()).toHaveLength(before + 1);
      expect(log.warnings().at(-1)?.reason).toMatch(reason);
    }
  });

  it('does not save a state above the limit (one warning), removes the older file so the next start lists from 0, and saves again once it fits', async () => {
    const small = encodeInformerState(stateAt(3, 2), OWNER, new Date());
    const { file, log } = await fixture(Buffer.byteLength(small) + 100);
    expect(await file.save(stateAt(3, 2))).toBe('written');
    expect(await file.save(stateAt(4, 50))).toBe('too_large');
    expect(await file.save(stateAt(5, 60))).toBe('too_large');
    expect(log.warnings().filter((l) => /too large to save/.test(l.msg))).toHaveLength(1);
    expect(await file.load()).toBeUndefined();
    expect(await file.save(stateAt(6, 2))).toBe('written');
    expect(await file.load()).toEqual(stateAt(6, 2));

    // A file already above the limit is not even read.
    await writeFile(file.path, encodeInformerState(stateAt(7, 50), OWNER, new Date()));
    expect(await file.load()).toBeUndefined();
    expect(log.warnings().at(-1)?.reason).toMatch(/above the limit/);
  });
});

describe('InformerStateSaver', () => {
  it('coalesces a burst of changes into one write, skips an unmoved resume point, and writes once more when stopped', async () => {
    let current: InformersState | undefined = stateAt(5);
    let reads = 0;
    const writes: InformersState[] = [];
    const saver = new InformerStateSaver({
      snapshot: () => {
        reads++;
        return current;
      },
      save: async (s) => {
        writes.push(s);
        return 'written';
      },
      saved: stateAt(5),
      intervalMs: 20,
      logger: capturedLogger().logger,
    });
    const ctl = new AbortController();
    const done = saver.run(ctl.signal);

    saver.request();
    await until(() => saver.stats.skipped === 1, 'the unchanged state to be skipped');
    expect(writes).toHaveLength(0);

    current = stateAt(6);
    for (let i = 0; i < 50; i++) saver.request();
    await until(() => writes.length === 1, 'one write');
    expect(writes[0]).toEqual(stateAt(6));

    // Nothing worth saving (a relist in progress): nothing written.
    current = undefined;
    const readsBefore = reads;
    saver.request();
    await until(() => reads === readsBefore + 1, 'the state to be read');
    expect(writes).toHaveLength(1);

    current = stateAt(7);
    ctl.abort();
    await done;
    expect(writes.map((w) => w.device?.revision)).toEqual([6, 7]);
    expect(saver.stats).toMatchObject({ written: 2, failed: 0 });
  });

  it('writes nothing within the interval while changes keep coming (they join the next write)', async () => {
    let current = stateAt(5);
    let reads = 0;
    const writes: InformersState[] = [];
    const saver = new InformerStateSaver({
      snapshot: () => {
        reads++;
        return current;
      },
      save: async (s) => {
        writes.push(s);
        return 'written';
      },
      intervalMs: 600_000,
      logger: capturedLogger().logger,
    });
    const ctl = new AbortController();
    const done = saver.run(ctl.signal);
    for (let revision = 6; revision <= 10; revision++) {
      current = stateAt(revision);
      saver.request();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(reads).toBe(0);
    expect(writes).toHaveLength(0);
    ctl.abort();
    await done;
    expect(writes.map((w) => w.device?.revision)).toEqual([10]);
  });

  it('logs a failed write and tries again at the next change', async () => {
    let current = stateAt(5);
    let fail = true;
    const writes: InformersState[] = [];
    const log = capturedLogger();
    const saver = new InformerStateSaver({
      snapshot: () => current,
      save: async (s) => {
        if (fail) throw new Error('disk full');
        writes.push(s);
        return 'written';
      },
      intervalMs: 1,
      logger: log.logger,
    });
    const ctl = new AbortController();
    const done = saver.run(ctl.signal);
    saver.request();
    await until(() => saver.stats.failed === 1, 'the failure');
    expect(log.warnings().at(-1)?.msg).toMatch(/saving the informer state failed/);
    fail = false;
    current = stateAt(6);
    saver.request();
    await until(() => writes.length === 1, 'the retry');
    ctl.abort();
    await done;
    expect(writes.map((w) => w.device?.revision)).toEqual([6]);
  });
});
