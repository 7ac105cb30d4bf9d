/**
 * Where the local API listens, and how its clients find it: the address
 * file in the state directory (AGENT_LOCAL_ADDRESS_FILE), written once the
 * API listens and removed when it closes. The API alone, without a server.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, AgentFatalError, LocalApiAddressError, readLocalApiAddress, StateDirError } from '../../src/agent/index.js';
import { LocalApi, LocalApiListenError } from '../../src/agent/local-api.js';
import { AGENT_LOCAL_ADDRESS_FILE, AGENT_LOCAL_ROUTES, formatAgentLocalAddress, parseAgentLocalAddress } from '../../src/protocol/index.js';
import { agentOptions, runAgent, tempDir } from './support/harness.js';
import { freePort } from '../support/postgres-server.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function stateDir(): Promise<string> {
  const d = await tempDir('fp-local-address-');
  cleanups.push(d.remove);
  return d.path;
}

/** A local API on `port` whose status names `who`. */
async function startApi(dir: string, port: number, who: string): Promise<LocalApi> {
  const api = await LocalApi.start({
    port,
    stateDir: dir,
    logger: pino({ level: 'silent' }),
    handlers: { status: async () => ({ who }), forceSync: async () => ({ applied_revision: 1 }) },
  });
  cleanups.push(() => api.close());
  return api;
}

describe('the local API address file', () => {
  it('two APIs on the default port and different state directories both listen, each in its own file, where a client finds it', async () => {
    const [dirA, dirB] = [await stateDir(), await stateDir()];
    const a = await startApi(dirA, AGENT_DEFAULTS.localPort, 'a');
    const b = await startApi(dirB, AGENT_DEFAULTS.localPort, 'b');
    expect(a.port).not.toBe(b.port);
    for (const [dir, api, who] of [[dirA, a, 'a'], [dirB, b, 'b']] as const) {
      expect(await readFile(join(dir, AGENT_LOCAL_ADDRESS_FILE), 'utf8')).toBe(`127.0.0.1:${api.port}\n`);
      const found = await readLocalApiAddress(dir);
      expect(found).toEqual({ host: '127.0.0.1', port: api.port, url: `http://127.0.0.1:${api.port}` });
      const res = await fetch(`${found.url}${AGENT_LOCAL_ROUTES.status}`);
      expect(await res.json()).toEqual({ who });
      // Written aside and renamed into place: nothing else is left in the directory.
      expect(await readdir(dir)).toEqual([AGENT_LOCAL_ADDRESS_FILE]);
    }
  });

  it('an explicit port is bound exactly, and written the same way', async () => {
    const dir = await stateDir();
    const port = await freePort();
    const api = await startApi(dir, port, 'fixed');
    expect(api.port).toBe(port);
    expect(await readLocalApiAddress(dir)).toMatchObject({ port });
    // A second API on that port (another state directory) can't listen, and writes nothing.
    const other = await stateDir();
    await expect(startApi(other, port, 'second')).rejects.toBeInstanceOf(LocalApiListenError);
    expect(await readdir(other)).toEqual([]);
  });

  it('close removes the file; a client then says no agent runs there', async () => {
    const dir = await stateDir();
    const api = await startApi(dir, 0, 'x');
    await api.close();
    expect(await readdir(dir)).toEqual([]);
    const err = await readLocalApiAddress(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalApiAddressError);
    expect(err).toMatchObject({ message: `${join(dir, AGENT_LOCAL_ADDRESS_FILE)} does not exist: is an agent running with --state-dir ${dir}?` });
  });

  it('a file that cannot be written stops the API (the port is free again) with a StateDirError naming it', async () => {
    const dir = await stateDir();
    await mkdir(join(dir, AGENT_LOCAL_ADDRESS_FILE));
    const port = await freePort();
    const err = await startApi(dir, port, 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateDirError);
    expect(err).toMatchObject({ message: expect.stringContaining(`writing the local API's address to ${join(dir, AGENT_LOCAL_ADDRESS_FILE)} failed`) });
    expect((await startApi(await stateDir(), port, 'y')).port).toBe(port);
  });

  it('the agent stops with state_dir, before it talks to the server, when it cannot write the file', async () => {
    const dir = await stateDir();
    await mkdir(join(dir, AGENT_LOCAL_ADDRESS_FILE));
    const err = await runAgent(agentOptions({ server: `http://127.0.0.1:${await freePort()}`, registrationKey: 'fpr_x', stateDir: dir })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentFatalError);
    expect(err).toMatchObject({ reason: 'state_dir', message: expect.stringContaining(AGENT_LOCAL_ADDRESS_FILE) });
  });

  it('a client refuses a file that does not hold HOST:PORT', async () => {
    expect(parseAgentLocalAddress(formatAgentLocalAddress({ host: '127.0.0.1', port: 8722 }))).toEqual({ host: '127.0.0.1', port: 8722 });
    expect(parseAgentLocalAddress('127.0.0.1:8722')).toEqual({ host: '127.0.0.1', port: 8722 });
    for (const bad of ['', '127.0.0.1', '127.0.0.1:0', '127.0.0.1:65536', '300.0.0.1:80', 'localhost:80', '127.0.0.1:80\n\n', ' 127.0.0.1:80']) {
      expect(parseAgentLocalAddress(bad), JSON.stringify(bad)).toBeUndefined();
    }
    const dir = await stateDir();
    await writeFile(join(dir, AGENT_LOCAL_ADDRESS_FILE), 'garbage\n');
    await expect(readLocalApiAddress(dir)).rejects.toThrow(new LocalApiAddressError(`${join(dir, AGENT_LOCAL_ADDRESS_FILE)} does not hold HOST:PORT: "garbage\\n"`));
  });
});
