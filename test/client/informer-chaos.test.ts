import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FleetplaneClient, SharedInformers, type Informer, type WatchKind } from '../../src/client/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { FAST } from './support/informer-harness.js';
import { until } from './support/wait.js';

type Op =
  | { op: 'put'; kind: WatchKind; id: number }
  | { op: 'remove'; kind: WatchKind; id: number }
  | { op: 'cut' }
  | { op: 'bookmark' }
  | { op: 'compact-and-cut' }
  | { op: 'pause' };

const KINDS = ['device', 'security-group'] as const;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), kind: fc.constantFrom(...KINDS), id: fc.nat(7) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('remove' as const), kind: fc.constantFrom(...KINDS), id: fc.nat(7) }) },
  { weight: 2, arbitrary: fc.constant({ op: 'cut' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'bookmark' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'compact-and-cut' as const }) },
  { weight: 4, arbitrary: fc.constant({ op: 'pause' as const }) },
);

/** Mirrors an informer from its callbacks alone, and records any callback that contradicts it. */
function mirror<K extends WatchKind>(informer: Informer<K>, violations: string[]): Map<string, number> {
  const m = new Map<string, number>();
  informer.onAdd((o) => {
    if (m.has(o.id)) violations.push(`add of present ${o.id}`);
    m.set(o.id, o.revision);
  });
  informer.onUpdate((old, o) => {
    if (m.get(o.id) !== old.revision) violations.push(`update of ${o.id} from unknown ${old.revision}`);
    if (o.revision <= old.revision) violations.push(`update of ${o.id} not newer`);
    m.set(o.id, o.revision);
  });
  informer.onDelete((o) => {
    if (!m.has(o.id)) violations.push(`delete of absent ${o.id}`);
    m.delete(o.id);
  });
  return m;
}

describe('informers under connection cuts', () => {
  it('end with exactly the server state, whatever the cuts and compactions', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 40 }), fc.boolean(), async (ops, joinLate) => {
        const server = await new FakeFleetServer().start();
        const client = new FleetplaneClient({ baseUrl: server.url, token: server.token });
        const shared = new SharedInformers(client, server.org, FAST).start();
        const violations: string[] = [];
        try {
          const devices = shared.informer('device');
          const devMirror = mirror(devices, violations);
          let groups: Informer<'security-group'> | undefined;
          let groupMirror: Map<string, number> | undefined;
          const join = () => {
            groups = shared.informer('security-group');
            groupMirror = mirror(groups, violations);
          };
          if (!joinLate) join();
          for (const [i, op] of ops.entries()) {
            if (joinLate && i === Math.floor(ops.length / 2)) join();
            switch (op.op) {
              case 'put':
                server.put(op.kind, { id: `${op.kind}-${op.id}`, n: i });
                break;
              case 'remove':
                if (server.live.get(op.kind)!.has(`${op.kind}-${op.id}`)) server.remove(op.kind, `${op.kind}-${op.id}`);
                break;
              case 'cut':
                server.cutAll();
                break;
              case 'bookmark':
                server.bookmark();
                break;
              case 'compact-and-cut':
                server.compact();
                server.cutAll();
                break;
              case 'pause':
                await new Promise((r) => setTimeout(r, 3));
                break;
            }
          }
          if (!groups) join();
          const synced = (inf: Informer<WatchKind>, kind: WatchKind) =>
            inf.hasSynced() && JSON.stringify(inf.list()) === JSON.stringify(server.state(kind));
          await until(() => synced(devices, 'device') && synced(groups!, 'security-group'), 'convergence');
          expect(devices.list()).toEqual(server.state('device'));
          expect(groups!.list()).toEqual(server.state('security-group'));
          expect(violations).toEqual([]);
          expect(new Map(devices.list().map((o) => [o.id, o.revision]))).toEqual(devMirror);
          expect(new Map(groups!.list().map((o) => [o.id, o.revision]))).toEqual(groupMirror);
          expect(server.watchers.size).toBeLessThanOrEqual(1);
        } finally {
          await shared.stop();
          await server.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
