/** Runs `fleetplane ctl` in process against a fake server, with buffers for stdout and stderr. */
import { join } from 'node:path';
import { runCtl } from '../../../src/cli/ctl/index.js';
import type { FakeFleetServer } from './fake-fleet-server.js';
import { scratchDir } from '../../support/scratch-dir.js';

export class TextBuffer {
  text = '';
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

/** A fixed clock for LAST SEEN: 2030-01-01T00:00:00Z. */
export const NOW = Date.parse('2030-01-01T00:00:00Z');

/** An RFC 3339 time `seconds` before NOW. */
export function ago(seconds: number): string {
  return new Date(NOW - seconds * 1000).toISOString();
}

export interface CtlOptions {
  /** Replaces the default environment (the fake server's URL and token, and a config path nobody wrote). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  stdout?: TextBuffer;
  stderr?: TextBuffer;
  cwd?: string;
}

export interface CtlResult {
  code: number;
  out: string;
  err: string;
}

/** A config file path in a fresh directory: no test reads the real ~/.config. */
export function freshConfigPath(): string {
  return join(scratchDir('ctl-config'), 'config.json');
}

export function ctlRunner(server: () => FakeFleetServer) {
  return async function ctl(argv: string[], opts: CtlOptions = {}): Promise<CtlResult> {
    const stdout = opts.stdout ?? new TextBuffer();
    const stderr = opts.stderr ?? new TextBuffer();
    const env = opts.env ?? { FLEETPLANE_URL: server().url, FLEETPLANE_TOKEN: server().token, FLEETPLANE_CONFIG: freshConfigPath() };
    const code = await runCtl(argv, {
      stdout,
      stderr,
      env,
      now: () => NOW,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    });
    return { code, out: stdout.text, err: stderr.text };
  };
}

/** Runs `fleetplane ctl` in process against a real server at `url` with `token`, on the real clock. */
export async function ctlAt(url: string, token: string, argv: string[]): Promise<CtlResult> {
  const stdout = new TextBuffer();
  const stderr = new TextBuffer();
  const code = await runCtl(argv, { stdout, stderr, env: { FLEETPLANE_URL: url, FLEETPLANE_TOKEN: token, FLEETPLANE_CONFIG: freshConfigPath() } });
  return { code, out: stdout.text, err: stderr.text };
}
