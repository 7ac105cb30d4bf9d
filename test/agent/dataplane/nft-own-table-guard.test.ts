/**
 * The check before `nft -f` holds whatever produced the script: a script
 * that touches more than the agent's table (which the renderer can't
 * make) is refused where each dataplane hands it on, and `nft` never runs.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ForeignRulesetError, renderNftablesRemoval, renderWireGuard } from '../../../src/agent/dataplane/index.js';
import { loadOwnTableScript } from '../../../src/agent/dataplane/nft-own-table.js';
import { writeRenderedFiles } from '../../../src/agent/dataplane/render-dataplane.js';
import { FakeMachine } from './fake-machine.js';
import { allowAllScenario } from './scenarios.js';

const FORGED = 'table inet fleetplane\ndelete table inet fleetplane\nflush ruleset\n';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe('a script that would touch more than the own table never reaches nft', () => {
  it('the linux dataplane loads scripts through the check: nft runs for its own script, never for another', async () => {
    const machine = new FakeMachine('fp0');
    await expect(loadOwnTableScript(machine, FORGED, undefined)).rejects.toBeInstanceOf(ForeignRulesetError);
    expect(machine.calls).toEqual([]);
    await loadOwnTableScript(machine, renderNftablesRemoval(), undefined);
    expect(machine.lines()).toEqual(['nft -f <file>']);
  });

  it('the render dataplane writes nftables.conf (made for nft -f) only through the check', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fp-nft-guard-'));
    dirs.push(dir);
    const files = { wireguard: renderWireGuard(allowAllScenario()), nftables: FORGED };
    await expect(writeRenderedFiles(dir, files)).rejects.toBeInstanceOf(ForeignRulesetError);
    expect(await readdir(dir)).toEqual([]);
  });
});
