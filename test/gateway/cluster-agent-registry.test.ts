/**
 * The worker side of the cluster agent registry, against a stand-in for its
 * IPC channel to the primary: the syncs of one event-loop turn go in one
 * message, each device with whether it is held when the message leaves, and
 * each `sync` resolves once the primary answered that message.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ClusterAgentRegistry, type PrimaryChannel } from '../../src/server/gateway/cluster-agent-registry.js';

interface SetMessage {
  type: string;
  op: string;
  seq: number;
  replica: string;
  devices: [string, boolean][];
}

/** Captures what the worker sends; `answer` replies to a message as the primary does. */
function fakePrimary(): { channel: PrimaryChannel; sent: SetMessage[]; answer(m: SetMessage): void } {
  const sent: SetMessage[] = [];
  const listeners = new Set<(m: unknown) => void>();
  const channel: PrimaryChannel = {
    connected: true,
    send: (m) => sent.push(m as SetMessage),
    onMessage: (l) => listeners.add(l),
    offMessage: (l) => listeners.delete(l),
  };
  return { channel, sent, answer: (m) => listeners.forEach((l) => l({ type: m.type, op: 'done', seq: m.seq })) };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('ClusterAgentRegistry', () => {
  it('sends the syncs of one turn in one message, with each device held or not as it is when the message leaves', async () => {
    const primary = fakePrimary();
    const held = new Set(['a', 'b']);
    const registry = new ClusterAgentRegistry({ replicaId: 'r1', channel: primary.channel, connected: (d) => held.has(d), logger: pino({ level: 'silent' }) });
    await registry.start();
    let resolved = 0;
    const syncs = ['a', 'b', 'c', 'a'].map((d) => registry.sync(d).then(() => resolved++));
    held.delete('b');
    await turn();
    expect(primary.sent).toHaveLength(1);
    expect(primary.sent[0]).toMatchObject({ op: 'set', replica: 'r1', devices: [['a', true], ['b', false], ['c', false]] });
    expect(resolved).toBe(0);
    primary.answer(primary.sent[0]!);
    await Promise.all(syncs);
    expect(resolved).toBe(4);

    // A later turn is a new message.
    const later = registry.sync('d');
    await turn();
    expect(primary.sent).toHaveLength(2);
    expect(primary.sent[1]?.devices).toEqual([['d', false]]);
    primary.answer(primary.sent[1]!);
    await later;
    const stopping = registry.stop();
    primary.answer(primary.sent.at(-1)!);
    await stopping;
    expect(primary.sent.at(-1)?.op).toBe('clear');
  });

  it('sends nothing for syncs made after it stopped, and resolves them', async () => {
    const primary = fakePrimary();
    const registry = new ClusterAgentRegistry({ replicaId: 'r1', channel: primary.channel, connected: () => true, logger: pino({ level: 'silent' }) });
    await registry.start();
    const pending = registry.sync('a');
    const stopping = registry.stop();
    const clear = primary.sent.find((m) => m.op === 'clear');
    if (clear) primary.answer(clear);
    await stopping;
    await pending;
    await registry.sync('b');
    await turn();
    expect(primary.sent.filter((m) => m.op === 'set')).toEqual([]);
  });
});
