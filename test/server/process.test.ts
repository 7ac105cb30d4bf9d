import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { paths, ROUTES } from '../../src/protocol/index.js';
import { buildDist } from '../support/fleetplane-process.js';
import { serve } from './support/serve-process.js';

/** Starting a fresh process is slow on a busy machine; this bounds a hang, not speed. */
const PROCESS_TIMEOUT = 180_000;

describe('fleetplane serve as a real process', () => {
  beforeAll(buildDist, 120_000);

  it.concurrent('prints its URL and admin token, answers, and exits 0 on SIGTERM', async () => {
    const p = serve(['--memory', '--port', '0', '--host', '127.0.0.1']);
    try {
      const [, url] = await p.waitFor(/fleetplane is listening on (http:\/\/127\.0\.0\.1:\d+)/);
      const [, token] = await p.waitFor(/admin token: (fpa_\S+)/);
      expect(url).not.toMatch(/:0$/);
      const health = await fetch(`${url}${ROUTES.healthz}`);
      expect(health.status).toBe(200);
      const created = await fetch(`${url}${paths.organizations()}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'from-a-real-socket' }),
      });
      expect(created.status).toBe(201);
      const unauth = await fetch(`${url}${paths.organizations()}`);
      expect(unauth.status).toBe(401);
      p.child.kill('SIGTERM');
      const exit = await p.exit;
      expect(exit.code).toBe(0);
      // It stopped listening.
      await expect(fetch(`${url}${ROUTES.healthz}`)).rejects.toThrow();
    } finally {
      p.child.kill('SIGKILL');
    }
  }, PROCESS_TIMEOUT);

  it.concurrent('drains to the end through a second SIGTERM (a --workers worker gets two when its process group is signalled: its own and the primary\'s)', async () => {
    const p = serve(['--memory', '--port', '0', '--host', '127.0.0.1', '--log-level', 'info']);
    let idle: Socket | undefined;
    try {
      const [, port] = await p.waitFor(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      // A connection that sends no request holds the drain for its grace period: the second signal comes during it.
      idle = connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve, reject) => idle?.once('connect', resolve).once('error', reject));
      p.child.kill('SIGTERM');
      await p.waitForStderr(/"msg":"shutting down"/);
      p.child.kill('SIGTERM');
      const exit = await p.exit;
      expect({ code: exit.code, signal: exit.signal }, exit.stderr.split('\n').slice(-5).join('\n')).toEqual({ code: 0, signal: null });
      expect(exit.stderr).toMatch(/"msg":"stopped[",]/);
    } finally {
      idle?.destroy();
      p.child.kill('SIGKILL');
    }
  }, PROCESS_TIMEOUT);

  it.concurrent('prints the banner alone on stdout and logs JSON lines on stderr; warns once when listening beyond loopback without TLS', async () => {
    const wide = serve(['--memory', '--port', '0', '--host', '0.0.0.0']);
    const local = serve(['--memory', '--port', '0', '--host', '127.0.0.1']);
    try {
      for (const p of [wide, local]) await p.waitFor(/admin token: fpa_\S+\n/);
      for (const p of [wide, local]) {
        p.child.kill('SIGTERM');
        const { code, signal } = await p.exit;
        // A signal here means the process died rather than drained: its last log lines say why.
        expect({ code, signal }, p.out.stderr.split('\n').slice(-5).join('\n')).toEqual({ code: 0, signal: null });
        // The banner (and nothing else) on stdout, whole lines, no log record among them.
        expect(p.out.stdout).toMatch(/^fleetplane is listening on http:\/\/127\.0\.0\.1:\d+\nadmin token: fpa_\S+\ntry: curl [^\n]+\n$/);
        // stderr is not a terminal here: pino's JSON, one object per line.
        const records = p.out.stderr.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { level: number; msg: string });
        expect(records.length).toBeGreaterThan(0);
        expect(records.some((r) => r.msg === 'shutting down')).toBe(true);
      }
      const warnings = (p: ReturnType<typeof serve>) =>
        p.out.stderr.split('\n').filter((l) => l.includes('without TLS')).map((l) => JSON.parse(l) as { level: number; host: string });
      expect(warnings(wide)).toEqual([expect.objectContaining({ level: 40, host: '0.0.0.0' })]);
      expect(warnings(local)).toEqual([]);
    } finally {
      wide.child.kill('SIGKILL');
      local.child.kill('SIGKILL');
    }
  }, PROCESS_TIMEOUT);

  it.concurrent('exits 1 with one line naming the cause when it can\'t start: its port is taken, or a TLS file is missing', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
    const port = (taken.address() as AddressInfo).port;
    try {
      const busy = serve(['--memory', '--host', '127.0.0.1', '--port', String(port)]);
      const noCert = serve(['--memory', '--host', '127.0.0.1', '--port', '0', '--tls-cert', '/nonexistent/cert.pem', '--tls-key', '/nonexistent/key.pem']);
      const [b, n] = await Promise.all([busy.exit, noCert.exit]);
      expect(b.code).toBe(1);
      expect(b.stderr).toMatch(/^fleetplane: cannot listen on [^\n]* \(--port\): the port is in use by another process\n$/m);
      expect(b.stdout).not.toContain('listening');
      expect(n.code).toBe(1);
      expect(n.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^fleetplane: --tls-cert \/nonexistent\/cert\.pem: ENOENT/)]);
    } finally {
      taken.close();
    }
  }, PROCESS_TIMEOUT);

  it.concurrent('uses a configured admin token, from the environment or the flag (flag wins)', async () => {
    const p = serve(['--memory', '--port=0', '--host=127.0.0.1', '--admin-token', 'fpa_from_flag'], { FLEETPLANE_ADMIN_TOKEN: 'fpa_from_env' });
    try {
      const [, url] = await p.waitFor(/listening on (http:\/\/\S+)/);
      const ok = await fetch(`${url}${paths.organizations()}`, { headers: { authorization: 'Bearer fpa_from_flag' } });
      expect(ok.status).toBe(200);
      const env = await fetch(`${url}${paths.organizations()}`, { headers: { authorization: 'Bearer fpa_from_env' } });
      expect(env.status).toBe(401);
      p.child.kill('SIGTERM');
      expect((await p.exit).code).toBe(0);
    } finally {
      p.child.kill('SIGKILL');
    }
  }, PROCESS_TIMEOUT);

  for (const [what, args, env, named] of [
    ['an unknown flag', ['--memory', '--colour', 'red'], {}, '--colour'],
    ['a malformed flag', ['--memory', '--port', 'eighty'], {}, '--port'],
    ['a malformed environment variable', ['--memory'], { FLEETPLANE_TOMBSTONE_RETENTION: 'a day' }, 'FLEETPLANE_TOMBSTONE_RETENTION'],
  ] as const) {
    it(`stops with a one-line error naming ${what}, exit status 2`, async () => {
      const p = serve([...args], { ...env });
      const exit = await p.exit;
      expect(exit.code).toBe(2);
      const lines = exit.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(named);
      expect(exit.stdout).not.toContain('listening');
    }, PROCESS_TIMEOUT);
  }
});
