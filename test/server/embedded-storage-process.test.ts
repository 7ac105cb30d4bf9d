import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import { postgresPids } from '../support/embedded-postgres-pids.js';
import { buildDist } from '../support/fleetplane-process.js';
import { serve } from './support/serve-process.js';

/** Starting a fresh process and its PostgreSQL is slow on a busy machine; this bounds a hang, not speed. */
const PROCESS_TIMEOUT = 240_000;
const TOKEN = 'fpa_embedded_storage_process_test_token';

describe('the default storage of fleetplane serve (embedded PostgreSQL), as real processes', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fp-serve-data-'));
  beforeAll(buildDist, 120_000);
  afterAll(() => {
    for (const pid of postgresPids(dataDir)) process.kill(pid, 'SIGQUIT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    'refuses a second server on the same data directory with one line; keeps acknowledged writes across kill -9; stops what the dead server left running',
    async () => {
      const args = ['--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0', '--admin-token', TOKEN];
      const first = serve(args);
      const ids: string[] = [];
      try {
        const [, url] = await first.waitFor(/fleetplane is listening on (http:\/\/\S+)/);
        const second = serve(args);
        const refused = await second.exit;
        expect(refused.code).toBe(1);
        expect(refused.stderr.trim().split('\n')).toEqual([`fleetplane: data directory ${dataDir} is in use by another fleetplane server (pid ${first.child.pid})`]);
        expect(refused.stdout).not.toContain('listening');

        for (let i = 0; i < 20; i++) {
          const res = await fetch(`${url}${paths.organizations()}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `acknowledged-${i}` }),
          });
          expect(res.status).toBe(201);
          ids.push(((await res.json()) as { id: string }).id);
        }
      } finally {
        first.child.kill('SIGKILL');
      }
      await first.exit;
      // kill -9 gives the server no chance to stop its PostgreSQL: the next server must.
      const orphans = postgresPids(dataDir);
      expect(orphans).toHaveLength(1);

      const third = serve(args);
      try {
        const [, url] = await third.waitFor(/fleetplane is listening on (http:\/\/\S+)/);
        expect(postgresPids(dataDir)).not.toContain(orphans[0]);
        const res = await fetch(`${url}${paths.organizations()}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const listed = ((await res.json()) as { items: { id: string }[] }).items.map((o) => o.id);
        expect(listed.sort()).toEqual([...ids].sort());
        third.child.kill('SIGTERM');
        expect((await third.exit).code).toBe(0);
        // A clean stop stops PostgreSQL too.
        expect(postgresPids(dataDir)).toEqual([]);
      } finally {
        third.child.kill('SIGKILL');
      }
    },
    PROCESS_TIMEOUT,
  );
});
