/**
 * `fleetplane sync` as a real process against `fleetplane serve` as one
 * (issue 35, part 3): it applies the file, keeps the last good document
 * when the file breaks (and says why on POST /sync and in /metrics), and
 * exits 0 on SIGTERM.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, paths, SYNC_METRICS, SYNC_ROUTES } from '../../src/protocol/index.js';
import { buildDist, fleetplane } from '../support/fleetplane-process.js';
import { serve } from '../server/support/serve-process.js';
import { POLICY_SAMPLE } from '../support/policy-sample.js';

const DOC = POLICY_SAMPLE;

async function waitFor<T>(what: string, probe: () => T | undefined, exited: Promise<unknown>): Promise<T> {
  let done = false;
  void exited.then(() => (done = true));
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (done) throw new Error(`exited before ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('fleetplane sync as a real process', () => {
  let dir = '';
  beforeAll(async () => {
    await buildDist();
    dir = await mkdtemp(join(tmpdir(), 'fp-sync-'));
  }, 120_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('applies the file, keeps the last good document when it breaks, and stops on SIGTERM', async () => {
    const server = serve(['--memory', '--port', '0', '--host', '127.0.0.1']);
    let sync: ReturnType<typeof fleetplane> | undefined;
    try {
      const [, url] = await server.waitFor(/fleetplane is listening on (http:\/\/127\.0\.0\.1:\d+)/);
      const [, token] = await server.waitFor(/admin token: (fpa_\S+)/);
      const auth = { authorization: `Bearer ${token}` };
      const created = await fetch(`${url}${paths.organizations()}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'acme' }) });
      const org = ((await created.json()) as { id: string }).id;
      const file = join(dir, 'policy.yaml');
      await writeFile(file, DOC);

      sync = fleetplane(['sync', '--server', url!, '--token', token!, '--org', 'acme', '--from', file, '--interval', '60', '--listen', '127.0.0.1:0', '--log-level', 'info'], {});
      const running = sync;
      const listening = await waitFor('listening', () => /"url":"(http:\/\/127\.0\.0\.1:\d+)[^"]*"[^\n]*policy syncer listening/.exec(running.out.stderr)?.[1], running.exit);
      const policy = async () => {
        const res = await fetch(`${url}${paths.policy(org)}`, { headers: auth });
        return { text: await res.text(), state: res.headers.get(HEADERS.policyState) };
      };
      await waitFor('the first sync', () => (running.out.stderr.includes('applied the policy document') ? true : undefined), running.exit);
      expect(await policy()).toEqual({ text: DOC, state: 'managed' });

      await writeFile(file, DOC.replace('ports: 5432', 'ports: 99999'));
      const forced = (await (await fetch(`${listening}${SYNC_ROUTES.sync}`, { method: 'POST' })).json()) as { applied: boolean; error?: { reason: string; details?: { line?: number } } };
      expect(forced).toMatchObject({ applied: false, error: { reason: 'invalid', details: { line: 10 } } });
      expect((await policy()).text).toBe(DOC);
      const metrics = await (await fetch(`${listening}${SYNC_ROUTES.metrics}`)).text();
      expect(metrics).toMatch(new RegExp(`${SYNC_METRICS.errorsTotal}\\{reason="invalid"\\} 1`));
      expect(metrics).toMatch(new RegExp(`${SYNC_METRICS.sourceOk} 0`));
      expect(metrics).toMatch(new RegExp(`${SYNC_METRICS.lastAppliedRevision} [1-9]`));

      running.child.kill('SIGTERM');
      expect((await running.exit).code).toBe(0);
    } finally {
      sync?.child.kill('SIGKILL');
      server.child.kill('SIGKILL');
    }
  }, 180_000);
});
