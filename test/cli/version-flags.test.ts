/**
 * `--version` on every entry point: `fleetplane agent`, `serve` and `sync`
 * print the line `fleetplane --version` and `fleetplane ctl --version` do
 * (the version, and the commit of a clone), and exit 0 without starting.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runAgent } from '../../src/cli/agent.js';
import { runServe } from '../../src/cli/serve.js';
import { runSync } from '../../src/cli/sync.js';
import { runCtl } from '../../src/cli/ctl/index.js';
import { expectedVersionLine } from '../support/version-line.js';
import { TextBuffer } from '../client/support/ctl-runner.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** What `run` writes on stdout and stderr, and its exit code. */
async function captured(run: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((out += String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((err += String(chunk)), true));
  const code = await run();
  vi.restoreAllMocks();
  return { code, out, err };
}

describe('--version', () => {
  it.each([
    ['agent', runAgent],
    ['serve', runServe],
    ['sync', runSync],
  ])('fleetplane %s --version prints the version line and exits 0, other flags or not', async (_name, run) => {
    const line = expectedVersionLine();
    expect(line).toMatch(/^fleetplane \d+\.\d+\.\d+/);
    expect(await captured(() => run(['--version']))).toEqual({ code: 0, out: line, err: '' });
    // Before any other flag is read: a command line that would not start still answers it.
    expect(await captured(() => run(['--no-such-flag', '--version']))).toEqual({ code: 0, out: line, err: '' });
  });

  it('is the line fleetplane ctl --version prints', async () => {
    const stdout = new TextBuffer();
    expect(await runCtl(['--version'], { stdout, stderr: new TextBuffer(), env: {} })).toBe(0);
    expect(stdout.text).toBe(expectedVersionLine());
  });
});
