/**
 * The systemd units in deploy/systemd/: `systemd-analyze verify` accepts
 * them without a warning, and they keep the settings the README promises.
 * verify checks that ExecStart's program exists, so each unit is checked as
 * a copy whose paths point into this checkout (/usr/bin/node and
 * /opt/fleetplane are where the README installs them).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBinary, which } from '../support/binaries.js';

const ROOT = join(import.meta.dirname, '..', '..');
const UNITS = join(ROOT, 'deploy', 'systemd');
const INSTALLED_NODE = '/usr/bin/node';
const INSTALLED_ROOT = '/opt/fleetplane';
const hasSystemd = requireBinary('systemd-analyze (Debian package systemd)', which('systemd-analyze') !== undefined);

/** Runs `systemd-analyze verify` on a copy of `unit` with the install paths pointing here; its warnings are its stderr. */
async function verify(dir: string, unit: string, edit: (text: string) => string = (t) => t): Promise<{ code: number; stderr: string }> {
  const text = (await readFile(join(UNITS, unit), 'utf8')).replaceAll(INSTALLED_NODE, process.execPath).replaceAll(INSTALLED_ROOT, ROOT);
  const copy = join(dir, unit);
  await writeFile(copy, edit(text));
  try {
    const { stderr } = await promisify(execFile)('systemd-analyze', ['verify', copy], { cwd: dir });
    return { code: 0, stderr };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stderr: e.stderr ?? '' };
  }
}

/** The warnings about this unit (verify may also mention unrelated units of the machine). */
const about = (stderr: string, unit: string): string[] => stderr.split('\n').filter((l) => l.includes(unit));

function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m?.[1] !== undefined) out.set(m[1], [...(out.get(m[1]) ?? []), m[2] ?? '']);
  }
  return out;
}

describe.skipIf(!hasSystemd)('systemd units', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fp-units-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(['fleetplane-server.service', 'fleetplane-agent.service'])('systemd-analyze verify accepts %s without a warning', async (unit) => {
    const res = await verify(dir, unit);
    expect(about(res.stderr, unit)).toEqual([]);
    expect(res.code).toBe(0);
  });

  it('the check catches a misspelt directive, a bad value and a missing program', async () => {
    const unit = 'fleetplane-server.service';
    expect(about((await verify(dir, unit, (t) => t.replace('RestrictNamespaces=', 'RestrictNamspaces='))).stderr, unit).join('\n')).toMatch(/Unknown key/);
    expect(about((await verify(dir, unit, (t) => t.replace('Restart=on-failure', 'Restart=sometimes'))).stderr, unit).join('\n')).toMatch(/restart/i);
    expect((await verify(dir, unit, (t) => t.replace(process.execPath, '/nonexistent/node'))).code).not.toBe(0);
  });

  it('run as their own users with a state directory, restart on failure, take settings from an environment file', async () => {
    for (const unit of ['fleetplane-server.service', 'fleetplane-agent.service']) {
      const d = directives(await readFile(join(UNITS, unit), 'utf8'));
      expect(d.get('User')?.[0], unit).toMatch(/^fleetplane/);
      expect(d.get('StateDirectory')?.[0], unit).toMatch(/^fleetplane/);
      expect(d.get('Restart'), unit).toEqual(['on-failure']);
      expect(d.get('RestartPreventExitStatus'), unit).toEqual(['2']);
      expect(d.get('EnvironmentFile')?.[0], unit).toMatch(/\/etc\/fleetplane\//);
      expect(d.get('NoNewPrivileges'), unit).toEqual(['yes']);
      expect(d.get('ProtectSystem'), unit).toEqual(['strict']);
      expect(d.get('ExecStart')?.[0], unit).toBe(`${INSTALLED_NODE} ${INSTALLED_ROOT}/dist/cli/main.js ${unit.includes('agent') ? 'agent' : 'serve'}`);
    }
    const server = directives(await readFile(join(UNITS, 'fleetplane-server.service'), 'utf8'));
    expect(server.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(server.get('CapabilityBoundingSet')).toEqual(['']);
    const agent = directives(await readFile(join(UNITS, 'fleetplane-agent.service'), 'utf8'));
    expect(agent.get('AmbientCapabilities')).toEqual(['CAP_NET_ADMIN']);
    expect(agent.get('CapabilityBoundingSet')).toEqual(['CAP_NET_ADMIN']);
    expect(agent.get('RestrictAddressFamilies')?.[0]).toContain('AF_NETLINK');
  });
});
