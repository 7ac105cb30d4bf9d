/**
 * A restarted agent resumes its watch from the informer state kept in its
 * state directory (real server on 127.0.0.1, embedded PGlite, render
 * dataplane): it receives only what changed while it was down; a state it
 * can't use makes it list from 0; a compacted one makes it relist.
 */
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOptions } from '../../src/agent/index.js';
import { WIREGUARD_CONF_FILE, generateKeyPair } from '../../src/agent/dataplane/index.js';
import { INFORMER_STATE_FILE } from '../../src/agent/sync/informer-state-file.js';
import { decodeInformerState } from '../../src/agent/sync/informer-state-format.js';
import { CompactedError, type FetchLike, type FleetplaneClient, type InformersState, type Watch } from '../../src/client/index.js';
import type { FleetServer, Settings } from '../../src/server/index.js';
import { agentOptions, orgWithKey, runAgent, startListeningServer, tempDir, until, type RunningAgent } from './support/harness.js';

const PEERS = 40;

let server: FleetServer;
let url: string;
let admin: FleetplaneClient;
const cleanups: Array<() => Promise<void>> = [];

/** Process warnings while this file's agents start, run, restart and stop. */
const warnings: string[] = [];
const onWarning = (w: Error): void => void warnings.push(w.name);

beforeAll(async () => {
  process.on('warning', onWarning);
  ({ server, url, admin } = await startListeningServer());
}, 120_000);
afterAll(async () => {
  process.off('warning', onWarning);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await server?.close();
});

/** Watch requests an agent made, and how many change/delete events each brought. */
interface WatchRecord {
  body: Watch[];
  objectEvents: number;
}

/** A fetch that records every watch request and counts the object events of its stream. */
function recordingFetch(): { fetch: FetchLike; watches: WatchRecord[]; events: () => number } {
  const watches: WatchRecord[] = [];
  const fetchLike: FetchLike = async (input, init) => {
    const res = await fetch(input, init);
    if (init.method !== 'POST' || !input.endsWith('/events') || !res.body) return res;
    const rec: WatchRecord = { body: JSON.parse(String(init.body)) as Watch[], objectEvents: 0 };
    watches.push(rec);
    const decoder = new TextDecoder();
    let partial = '';
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          partial += decoder.decode(chunk, { stream: true });
          const lines = partial.split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) if (/"type":"(change|delete)"/.test(line)) rec.objectEvents++;
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: res.status, headers: res.headers });
  };
  return { fetch: fetchLike, watches, events: () => watches.reduce((n, w) => n + w.objectEvents, 0) };
}

/** A logger whose lines the test can read. */
function capturedLogger() {
  const lines: Array<{ msg?: string; reason?: string; level?: number }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { logger, lines };
}

/** An organization with PEERS devices (no agent) and a security group: a full list is far more than one change. */
async function populatedFleet(client: FleetplaneClient, serverUrl: string, name: string) {
  const { org, key } = await orgWithKey(client, name);
  await client.securityGroups.create(org, { description: 'web', inbound_rules: [], outbound_rules: [] });
  const peers = [];
  for (let i = 0; i < PEERS; i++) peers.push(await client.devices.create(org, { hostname: `peer-${i}`, public_key: generateKeyPair().publicKey }));
  const dir = await tempDir('fp-resume-');
  cleanups.push(dir.remove);
  const options: AgentOptions = agentOptions({ server: serverUrl, org, registrationKey: key, stateDir: dir.path, endpoints: ['192.0.2.1:51820'] });
  /** The agent applied the organization's head (the peers have no agent, so convergence counts only it). */
  const atHead = (agent: RunningAgent) =>
    until(async () => {
      const c = await client.convergence(org);
      return (await agent.agent.status()).applied_revision === c.revision ? c : undefined;
    }, 'the agent at the head');
  const saved = async (): Promise<InformersState> => {
    const decoded = decodeInformerState(await readFile(join(dir.path, INFORMER_STATE_FILE), 'utf8'), { server: serverUrl, organizationId: org });
    if ('problem' in decoded) throw new Error(`the state file is unusable: ${decoded.problem}`);
    return decoded.state;
  };
  return { org, peers, options, atHead, saved, statePath: join(dir.path, INFORMER_STATE_FILE), confPath: join(dir.path, WIREGUARD_CONF_FILE) };
}

const KINDS = ['organization', 'device', 'security-group'] as const;

describe('an agent restart', () => {
  it('resumes the watch from the saved state: only the delta comes, and the agent converges', async () => {
    const f = await populatedFleet(admin, url, 'resume');
    const first = recordingFetch();
    const a = await runAgent(f.options, { fetch: first.fetch });
    const c1 = await f.atHead(a);
    await a.stop();
    // The first start listed everything.
    expect(first.watches[0]?.body).toEqual(KINDS.map((kind) => ({ kind, gt_revision: 0, at_tail: false, patches: true, gzip: true })));
    const listed = first.events();
    expect(listed).toBeGreaterThanOrEqual(PEERS + 3);

    const state = await f.saved();
    const devices = await admin.devices.list(f.org);
    for (const kind of KINDS) expect(state[kind]).toMatchObject({ revision: expect.any(Number), atTail: true });
    for (const kind of KINDS) expect(state[kind]!.revision).toBeGreaterThanOrEqual(c1.revision);
    expect(state.device!.objects.map((d) => d.id).sort()).toEqual(devices.items.map((d) => d.id).sort());

    // One change while the agent is down.
    const gone = f.peers[0]!;
    await admin.devices.delete(f.org, gone.id);

    const second = recordingFetch();
    const b = await runAgent(f.options, { fetch: second.fetch });
    const c2 = await f.atHead(b);
    expect(c2.revision).toBeGreaterThan(c1.revision);
    const resumed = second.watches[0]?.body;
    expect(resumed?.map((w) => w.kind)).toEqual([...KINDS]);
    for (const w of resumed ?? []) {
      expect(w.gt_revision).toBeGreaterThan(0);
      expect(w.at_tail).toBe(true);
    }
    // Only the delta: the delete (and nothing like a second list).
    const delta = second.events();
    expect(delta).toBeGreaterThanOrEqual(1);
    expect(delta).toBeLessThanOrEqual(3);
    expect(delta * 10).toBeLessThan(listed);
    expect(second.watches.every((w) => w.body.every((k) => (k.gt_revision ?? 0) > 0))).toBe(true);

    const conf = await readFile(f.confPath, 'utf8');
    expect(conf).not.toContain(gone.public_key);
    expect(conf).toContain(f.peers[1]!.public_key);
    await b.stop();

    const after = await f.saved();
    for (const kind of KINDS) expect(after[kind]!.revision).toBeGreaterThanOrEqual(c2.revision);
    expect(after.device!.objects.map((d) => d.id)).not.toContain(gone.id);
    expect(after.device!.objects).toHaveLength(PEERS);
  });

  it.each([
    ['truncated', (text: string) => text.slice(0, Math.floor(text.length * 0.6)), /does not match its digest/],
    ['not JSON', () => 'this is not a state file\n{', /header is not a JSON object/],
    ['of another organization', (text: string, org: string) => text.replace(org, randomUUID()), /saved for organization/],
  ])('ignores a state file that is %s: lists from 0, converges, and saves a good one', async (_what, tamper, reason) => {
    const f = await populatedFleet(admin, url, 'tampered');
    const a = await runAgent(f.options);
    await f.atHead(a);
    await a.stop();
    const text = await readFile(f.statePath, 'utf8');
    await writeFile(f.statePath, tamper(text, f.org));

    const rec = recordingFetch();
    const { logger, lines } = capturedLogger();
    const b = await runAgent(f.options, { fetch: rec.fetch, logger });
    const c = await f.atHead(b);
    expect(rec.watches[0]?.body).toEqual(KINDS.map((kind) => ({ kind, gt_revision: 0, at_tail: false, patches: true, gzip: true })));
    expect(rec.events()).toBeGreaterThanOrEqual(PEERS + 3);
    const ignored = lines.filter((l) => l.msg?.startsWith('ignoring the saved informer state'));
    expect(ignored).toHaveLength(1);
    expect(ignored[0]?.reason).toMatch(reason);
    await b.stop();
    const saved = await f.saved();
    for (const kind of KINDS) expect(saved[kind]!.revision).toBeGreaterThanOrEqual(c.revision);
  });
});

describe('an agent restart after the server compacted what it missed', () => {
  let compacting: { server: FleetServer; url: string; admin: FleetplaneClient };
  beforeAll(async () => {
    const overrides: Partial<Settings> = { tombstoneRetention: 1, compactionInterval: 0.1 };
    compacting = await startListeningServer(overrides);
  }, 120_000);
  afterAll(async () => {
    await compacting?.server.close();
  });

  it('relists (revision_compacted), converges, and saves the relist’s result', async () => {
    const { admin: cAdmin, url: cUrl } = compacting;
    const f = await populatedFleet(cAdmin, cUrl, 'compacted');
    const a = await runAgent(f.options);
    await f.atHead(a);
    await a.stop();
    const before = await f.saved();
    const savedAt = before.device!.revision;

    const gone = f.peers[0]!;
    await cAdmin.devices.delete(f.org, gone.id);
    await until(
      () => cAdmin.devices.page(f.org, { gtRevision: savedAt }).then(
        () => undefined,
        (err: unknown) => (err instanceof CompactedError ? true : undefined),
      ),
      'the delete to be compacted',
    );

    const rec = recordingFetch();
    const b = await runAgent(f.options, { fetch: rec.fetch });
    const c = await f.atHead(b);
    expect(rec.watches[0]?.body).toEqual(KINDS.map((kind) => ({ kind, gt_revision: savedAt, at_tail: true, patches: true, gzip: true })));
    expect(rec.watches.at(-1)?.body).toEqual(KINDS.map((kind) => ({ kind, gt_revision: 0, at_tail: false, patches: true, gzip: true })));
    expect(await readFile(f.confPath, 'utf8')).not.toContain(gone.public_key);
    await b.stop();

    const after = await f.saved();
    for (const kind of KINDS) expect(after[kind]).toMatchObject({ atTail: true });
    for (const kind of KINDS) expect(after[kind]!.revision).toBeGreaterThanOrEqual(c.revision);
    expect(after.device!.objects.map((d) => d.id)).not.toContain(gone.id);
  });
});

describe('agents that start, restart and stop', () => {
  // Runs after the cases above (one file's tests run in order): a plain-text warning among an agent's JSON logs.
  it('print no MaxListenersExceededWarning', () => {
    expect(warnings.filter((w) => w === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
