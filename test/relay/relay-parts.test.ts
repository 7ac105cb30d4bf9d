/**
 * Parts of the relay on their own: the framing it checks, the ids it keys
 * sessions by, and the primary's directory of relay sessions under
 * `--workers` (its own, apart from the agents').
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CLUSTER_REGISTRIES, ClusterAgentRegistry, type PrimaryChannel } from '../../src/server/gateway/cluster-agent-registry.js';
import { countRecords, orgIdAt, orgIdBytes, sessionId, splitSessionId } from '../../src/server/relay/relay-frames.js';

const record = (...bytes: number[]): Buffer => Buffer.from(bytes);

describe('relay framing', () => {
  const key = Buffer.alloc(32, 7);
  it('counts the records after the key; any framing error makes the whole message malformed (0)', () => {
    expect(countRecords(Buffer.concat([key, record(0, 1, 9)]), 32)).toBe(1);
    expect(countRecords(Buffer.concat([key, record(0, 1, 9, 0, 2, 1, 2)]), 32)).toBe(2);
    expect(countRecords(key, 32)).toBe(0); // no record
    expect(countRecords(Buffer.concat([key, record(0, 0)]), 32)).toBe(0); // an empty packet
    expect(countRecords(Buffer.concat([key, record(0, 3, 1, 2)]), 32)).toBe(0); // past the end
    expect(countRecords(Buffer.concat([key, record(0, 1, 9, 0)]), 32)).toBe(0); // half a length
  });

  it('carries an organization id as its 16 bytes, and keys sessions by organization and key', () => {
    const org = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const bytes = orgIdBytes(org);
    expect(bytes).toHaveLength(16);
    expect(orgIdAt(Buffer.concat([bytes, key]), 0)).toBe(org);
    const id = sessionId(org, key.toString('base64'));
    expect(splitSessionId(id)).toEqual([org, key.toString('base64')]);
    expect(() => orgIdBytes('not-a-uuid')).toThrow();
  });
});

describe("the primary's directory of relay sessions (--workers without Redis)", () => {
  it('is apart from the agents’: a relay registry sends and hears only its own messages', async () => {
    const sent: { type: string; op: string; seq: number }[] = [];
    const listeners = new Set<(m: unknown) => void>();
    const channel: PrimaryChannel = {
      connected: true,
      send: (m) => sent.push(m as { type: string; op: string; seq: number }),
      onMessage: (l) => listeners.add(l),
      offMessage: (l) => listeners.delete(l),
    };
    const registry = new ClusterAgentRegistry({ replicaId: 'r1', type: CLUSTER_REGISTRIES.relay, channel, connected: () => true, logger: pino({ level: 'silent' }) });
    await registry.start();
    let found: string[] | undefined;
    const lookup = registry.lookup('org:key').then((r) => (found = r));
    const asked = sent[0];
    if (!asked) throw new Error('nothing sent');
    expect(asked).toMatchObject({ type: CLUSTER_REGISTRIES.relay, op: 'lookup' });
    // The agents' directory answering the same sequence number is not the relay's answer.
    for (const l of listeners) l({ type: CLUSTER_REGISTRIES.agents, op: 'done', seq: asked.seq, replicas: ['wrong'] });
    await new Promise((r) => setImmediate(r));
    expect(found).toBeUndefined();
    for (const l of listeners) l({ type: CLUSTER_REGISTRIES.relay, op: 'done', seq: asked.seq, replicas: ['r2'] });
    await lookup;
    expect(found).toEqual(['r2']);
    const stopping = registry.stop();
    const clear = sent.at(-1);
    if (clear) for (const l of listeners) l({ type: CLUSTER_REGISTRIES.relay, op: 'done', seq: clear.seq });
    await stopping;
  });
});
