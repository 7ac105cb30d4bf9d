import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DataplaneError,
  RenderDataplane,
  renderNftables,
  renderWireGuard,
  type DesiredDataplane,
} from '../../../src/agent/dataplane/index.js';
import { desiredStateOf, device, deviceId, keyPair } from './fixtures.js';

function desired(peers: number[]): DesiredDataplane {
  return desiredStateOf(1, {
    devices: [device(1), ...peers.map((n) => device(n))],
    securityGroups: [],
  });
}

describe('RenderDataplane', () => {
  let dir: string;
  let stateDir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fp-render-'));
    stateDir = join(dir, 'state');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes both files (0600, no temporary files left) and reports the change', async () => {
    const dp = new RenderDataplane({ stateDir, interfaceName: 'fp0' });
    const d = desired([2, 3]);
    const result = await dp.apply(d);
    expect(result).toEqual({ changed: true, actions: ['wrote wireguard.conf', 'wrote nftables.conf'] });
    expect(await readFile(join(stateDir, 'wireguard.conf'), 'utf8')).toBe(renderWireGuard(d));
    expect(await readFile(join(stateDir, 'nftables.conf'), 'utf8')).toBe(renderNftables(d));
    expect((await stat(join(stateDir, 'wireguard.conf'))).mode & 0o777).toBe(0o600);
    expect((await readdir(stateDir)).sort()).toEqual(['nftables.conf', 'wireguard.conf']);
  });

  it('rewrites only files whose content changes', async () => {
    const dp = new RenderDataplane({ stateDir, interfaceName: 'fp0' });
    await dp.apply(desired([2, 3]));
    const wgInode = (await stat(join(stateDir, 'wireguard.conf'))).ino;
    const nftInode = (await stat(join(stateDir, 'nftables.conf'))).ino;
    expect(await dp.apply(desired([3, 2]))).toEqual({ changed: false, actions: [] });
    expect((await stat(join(stateDir, 'wireguard.conf'))).ino).toBe(wgInode);

    const result = await dp.apply(desired([2, 3, 4]));
    expect(result).toEqual({ changed: true, actions: ['wrote wireguard.conf'] });
    expect((await stat(join(stateDir, 'wireguard.conf'))).ino).not.toBe(wgInode);
    expect((await stat(join(stateDir, 'nftables.conf'))).ino).toBe(nftInode);
  });

  it('also after a restart (compares with the files on disk)', async () => {
    await new RenderDataplane({ stateDir, interfaceName: 'fp0' }).apply(desired([2]));
    expect((await new RenderDataplane({ stateDir, interfaceName: 'fp0' }).apply(desired([2]))).changed).toBe(false);
  });

  it('describes the applied state without the private key, and cleans up', async () => {
    const dp = new RenderDataplane({ stateDir, interfaceName: 'fp0' });
    expect((await dp.describe()).applied).toBe(false);
    await dp.apply(desired([2]));
    const description = await dp.describe();
    expect(description).toMatchObject({ mode: 'render', applied: true, address: '100.64.0.1/16', public_key: keyPair(1).publicKey });
    expect(description.peers.map((p) => p.device_id)).toEqual([deviceId(2)]);
    expect(JSON.stringify(description)).not.toContain(keyPair(1).privateKey);
    await dp.cleanup();
    expect(await readdir(stateDir)).toEqual([]);
  });

  it('rejects a desired state for another interface', async () => {
    const dp = new RenderDataplane({ stateDir, interfaceName: 'fp1' });
    await expect(dp.apply(desired([2]))).rejects.toBeInstanceOf(DataplaneError);
  });
});
