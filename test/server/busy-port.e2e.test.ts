import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresPids } from '../support/embedded-postgres-pids.js';
import { buildDist } from '../support/fleetplane-process.js';
import { serve } from './support/serve-process.js';

/**
 * Issue 33, "fail fast": `serve` binds its API port before it starts or
 * migrates any storage (and before it loads the rest of the server), so a
 * port in use ends the start at once, with one line and exit 1, leaving no
 * PostgreSQL cluster behind. How long that takes is the bench's to measure,
 * not a test's.
 */
describe('fleetplane serve on a port in use, as a real process', () => {
  let taken: Server;
  let port = 0;
  const dirs: string[] = [];
  beforeAll(async () => {
    await buildDist();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
    port = (taken.address() as AddressInfo).port;
  }, 180_000);
  afterAll(() => {
    taken.close();
    for (const dir of dirs) {
      // A failed assertion below may mean a cluster did start: it must not outlive the test.
      for (const pid of postgresPids(dir)) process.kill(pid, 'SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const starts: { what: string; storage: (dataDir: string) => string[] }[] = [
    { what: 'the default storage (embedded PostgreSQL)', storage: (dir) => ['--data-dir', dir] },
    { what: '--memory', storage: () => ['--memory'] },
    { what: '--workers 2 on the default storage', storage: (dir) => ['--workers', '2', '--data-dir', dir] },
  ];
  for (const { what, storage } of starts) {
    it(`${what}: exit 1 at once with one line naming the port; no PostgreSQL cluster made`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fp-busy-port-'));
      dirs.push(dataDir);
      const p = serve([...storage(dataDir), '--host', '127.0.0.1', '--port', String(port)]);
      try {
        const exit = await p.exit;
        expect({ code: exit.code, signal: exit.signal }, exit.stderr).toEqual({ code: 1, signal: null });
        expect(exit.stderr.split('\n')).toEqual([`fleetplane: cannot listen on 127.0.0.1:${port} (--port): the port is in use by another process`, '']);
        expect(exit.stdout).not.toContain('listening');
        // Not even an empty cluster directory or the data directory's lock: nothing of the storage began.
        expect(readdirSync(dataDir)).toEqual([]);
        expect(postgresPids(dataDir)).toEqual([]);
      } finally {
        p.child.kill('SIGKILL');
      }
    }, 60_000);
  }
});
