/**
 * `fleetplane serve --tls-cert --tls-key` as a real process, with a private
 * CA made by openssl: the SDK and the agent tunnel's WebSocket trust it, and
 * SIGHUP swaps the certificate for new connections while open ones stay.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AGENT_LOCAL_ROUTES, AGENT_METHODS, bearerAuthorization, ROUTES } from '../../src/protocol/index.js';
import { FleetplaneClient } from '../../src/client/index.js';
import { trustedFetch } from '../../src/agent/identity/trusted-fetch.js';
import { tunnelUrl } from '../../src/agent/tunnel/index.js';
import { generateKeyPair } from '../../src/agent/dataplane/index.js';
import { requireBinary, which } from '../support/binaries.js';
import { issueServerCert, makeTestCa, type ServerCert, type TestCa } from '../support/test-ca.js';
import { agentOptions, localJson, runAgent, until } from '../agent/support/harness.js';
import { ensureBuilt, MAIN, ROOT } from '../agent/support/processes.js';

const ADMIN = 'fpa_tls_test';
const hasOpenssl = requireBinary('openssl', which('openssl') !== undefined);

interface Served {
  child: ChildProcess;
  out: { stdout: string; stderr: string };
  exit: Promise<number | null>;
}

function serve(args: string[]): Served {
  const out = { stdout: '', stderr: '' };
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exit };
}

/** The SHA-256 fingerprint of the certificate a new TLS connection to `port` is served. */
function servedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      const fp = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fp);
    });
    socket.once('error', reject);
  });
}

const count = (text: string, re: RegExp): number => text.match(new RegExp(re.source, 'g'))?.length ?? 0;

describe.skipIf(!hasOpenssl)('fleetplane serve over TLS', () => {
  let dir: string;
  let ca: TestCa;
  let first: ServerCert;
  let second: ServerCert;
  let live: { certFile: string; keyFile: string };
  let server: Served;
  let url: string;
  let port: number;
  let admin: FleetplaneClient;

  beforeAll(async () => {
    ensureBuilt();
    dir = await mkdtemp(join(tmpdir(), 'fp-tls-'));
    ca = makeTestCa(dir);
    first = issueServerCert(ca, 'first');
    second = issueServerCert(ca, 'second');
    live = { certFile: join(dir, 'live.crt'), keyFile: join(dir, 'live.key') };
    await copyFile(first.certFile, live.certFile);
    await copyFile(first.keyFile, live.keyFile);
    server = serve(['--memory', '--host', '127.0.0.1', '--port', '0', '--admin-token', ADMIN, '--tls-cert', live.certFile, '--tls-key', live.keyFile]);
    const m = await until(() => /fleetplane is listening on (https:\/\/127\.0\.0\.1:(\d+))/.exec(server.out.stdout), 'the https banner', 120_000);
    url = m[1] ?? '';
    port = Number(m[2]);
    admin = new FleetplaneClient({ baseUrl: url, token: ADMIN, fetch: trustedFetch(ca.pem) });
  }, 180_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exit;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves the configured certificate, trusted with the CA and refused without it', async () => {
    expect(await servedFingerprint(port, ca.pem)).toBe(first.fingerprint256);
    // Node's own trust store doesn't know the private CA.
    await expect(fetch(`${url}${ROUTES.healthz}`)).rejects.toThrow();
    const org = await admin.organizations.create({ name: 'over-tls' });
    expect((await admin.organizations.get(org.id)).name).toBe('over-tls');
    // No warning about clear text: it listens on loopback, and with TLS.
    expect(server.out.stderr).not.toMatch(/without TLS/);
  });

  it('fleetplane ctl trusts the CA given by FLEETPLANE_CA_FILE, and fails (exit 1) without it', async () => {
    const ctl = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const out = { stdout: '', stderr: '' };
        const child = spawn(process.execPath, [MAIN, 'ctl', 'orgs', 'list', '-o', 'json'], {
          cwd: ROOT,
          env: { ...process.env, FLEETPLANE_URL: url, FLEETPLANE_TOKEN: ADMIN, FLEETPLANE_CONFIG: join(dir, 'no-config.json'), ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
        child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
        child.once('exit', (code) => resolve({ code, ...out }));
      });
    const trusted = await ctl({ FLEETPLANE_CA_FILE: ca.certFile });
    expect(trusted.code).toBe(0);
    expect((JSON.parse(trusted.stdout) as Array<{ name: string }>).map((o) => o.name)).toContain('over-tls');
    const untrusted = await ctl({});
    expect(untrusted.code).toBe(1);
    expect(untrusted.stdout).toBe('');
  }, 60_000);

  it('an agent with --ca-file enrolls (the key names the organization), watches and holds its tunnel over https', async () => {
    const org = await admin.organizations.create({ name: 'tls-agent' });
    const key = await admin.registrationKeys.create(org.id, { single_use: false });
    const stateDir = await mkdtemp(join(tmpdir(), 'fp-tls-agent-'));
    try {
      const agent = await runAgent(agentOptions({ server: url, registrationKey: key.key, stateDir, caFile: ca.certFile }));
      try {
        const status = await until(async () => {
          const s = await localJson(agent.localPort, 'GET', AGENT_LOCAL_ROUTES.status);
          return s.body['tunnel'] === 'connected' && s.body['connected'] === true ? s.body : undefined;
        }, 'the agent connected over TLS');
        expect(status['organization_id']).toBe(org.id);
        // Through the tunnel, over TLS: the server calls the agent.
        expect(await admin.devices.rpc(org.id, agent.deviceId, AGENT_METHODS.ping, {}, { wait: 10 })).toMatchObject({ pong: true });
      } finally {
        await agent.stop();
      }
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('SIGHUP reloads the certificate for new connections; an open tunnel survives; a bad file keeps the previous one', async () => {
    const org = await admin.organizations.create({ name: 'tls-reload' });
    const key = await admin.registrationKeys.create(org.id, { single_use: false });
    const device = await admin.devices.enroll(org.id, key.key, { hostname: 'tunnel-over-tls', public_key: generateKeyPair().publicKey });

    // A tunnel WebSocket that answers requests itself, as an agent would.
    const ws = new WebSocket(tunnelUrl(url), { ca: ca.pem, headers: { authorization: bearerAuthorization(device.device_token) } });
    let tunnelCert = '';
    ws.on('upgrade', (res) => {
      if (res.socket instanceof TLSSocket) tunnelCert = res.socket.getPeerCertificate().fingerprint256;
    });
    ws.on('message', (data: WebSocket.RawData) => {
      const frame = JSON.parse(String(data)) as { id?: unknown; method?: unknown; type?: unknown };
      if (typeof frame.id === 'string' && typeof frame.method === 'string') ws.send(JSON.stringify({ id: frame.id, result: { pong: true, answered_by: 'the test tunnel' } }));
      else if (frame.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
    });
    let closed = false;
    ws.on('close', () => (closed = true));
    await once(ws, 'open');
    expect(tunnelCert).toBe(first.fingerprint256);
    const rpc = () => admin.devices.rpc(org.id, device.id, AGENT_METHODS.ping, {}, { wait: 10 });
    expect(await rpc()).toEqual({ pong: true, answered_by: 'the test tunnel' });

    // Renewal: new files in place, then SIGHUP.
    await copyFile(second.keyFile, live.keyFile);
    await copyFile(second.certFile, live.certFile);
    server.child.kill('SIGHUP');
    await until(() => count(server.out.stderr, /"msg":"TLS certificate reloaded"/) === 1, 'the reload log line');
    expect(await servedFingerprint(port, ca.pem)).toBe(second.fingerprint256);
    // The tunnel opened before the reload is the same connection, still served by the first certificate, and still works.
    expect(closed).toBe(false);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(await rpc()).toEqual({ pong: true, answered_by: 'the test tunnel' });
    expect(await admin.organizations.get(org.id)).toMatchObject({ id: org.id });

    // A broken certificate file: logged, and the second certificate stays.
    await writeFile(live.certFile, 'not a certificate\n');
    server.child.kill('SIGHUP');
    await until(() => /"msg":"TLS certificate reload failed; still serving the previous certificate"/.test(server.out.stderr), 'the failed reload log line');
    expect(server.out.stderr).toMatch(/"level":50[^\n]*live\.crt/);
    expect(await servedFingerprint(port, ca.pem)).toBe(second.fingerprint256);
    expect(server.child.exitCode).toBeNull();
    expect(closed).toBe(false);
    expect(await rpc()).toEqual({ pong: true, answered_by: 'the test tunnel' });

    ws.close();
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  }, 120_000);
});
