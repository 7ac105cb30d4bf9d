import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { ProviderConfig, ProviderKnobs, ProviderStats, TestAccount, TestClient } from './provider-config.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../../..');

/** oidc-provider running in its own process on loopback, and the test's handles on it. */
export interface TestProvider {
  readonly issuer: string;
  /** Signs with a fresh key from now on; the old one stays in the JWKS. Returns the new `kid`. */
  rotateKey(): Promise<string>;
  setKnobs(knobs: Partial<ProviderKnobs>): Promise<void>;
  stats(): Promise<ProviderStats>;
  /** What the process wrote on stderr so far (for failure messages). */
  log(): string;
  /** Stops the process and removes its directory. */
  stop(): Promise<void>;
}

export interface TestProviderOptions {
  accounts: TestAccount[];
  clients: TestClient[];
}

/**
 * Starts the provider: compiles provider-main.ts with esbuild into a temporary directory (its
 * packages stay external and resolve through a node_modules link to the project's), runs it with
 * this Node, and waits for the issuer URL it prints.
 */
export async function startTestProvider(options: TestProviderOptions): Promise<TestProvider> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetplane-oidc-'));
  let child: ChildProcess | undefined;
  let stderr = '';
  try {
    const main = join(dir, 'provider-main.mjs');
    await build({
      entryPoints: [join(HERE, 'provider-main.ts')],
      outfile: main,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'silent',
    });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const adminToken = randomBytes(16).toString('hex');
    const config: ProviderConfig = { ...options, adminToken, cookieKeys: [randomBytes(32).toString('hex')] };
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });

    const proc = spawn(process.execPath, [main, configPath], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
    });
    const issuer = await new Promise<string>((resolveIssuer, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the test provider did not start within 20 s:\n${stderr}`)), 20_000);
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line !== undefined) {
          clearTimeout(timer);
          try {
            resolveIssuer((JSON.parse(line) as { issuer: string }).issuer);
          } catch (err) {
            reject(new Error(`the test provider printed ${JSON.stringify(line)}`, { cause: err }));
          }
        }
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the test provider exited (${code ?? signal}) before listening:\n${stderr}`));
      });
    });

    const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> => {
      const res = await fetch(`${issuer}${path}`, {
        method,
        headers: { 'x-test-admin': adminToken, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!res.ok) throw new Error(`test provider ${method} ${path}: HTTP ${res.status} ${await res.text()}`);
      return res.json();
    };
    const stop = async (): Promise<void> => {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise<void>((r) => proc.once('exit', () => r()));
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    };
    return {
      issuer,
      rotateKey: async () => ((await call('POST', '/__test/rotate-key', {})) as { kid: string }).kid,
      setKnobs: async (knobs) => {
        await call('POST', '/__test/knobs', knobs);
      },
      stats: async () => (await call('GET', '/__test/stats')) as ProviderStats,
      log: () => stderr,
      stop,
    };
  } catch (err) {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
