import { WATCH_KINDS, type KindValue, type WatchKind } from '../../protocol/wire.js';
import type { Informer } from '../../client/index.js';
import type { ChangeType } from './change-type.js';
import type { RemoteCommand } from './command-spec.js';
import { cliInformers, followInformers } from './informer-session.js';
import { watchKinds } from './kinds.js';
import { TableStream } from './table.js';

/** What a line says an object is: the device's hostname and tunnel IP, the group's description, the organization's name. */
const SUMMARY: { [K in WatchKind]: (o: KindValue[K]) => string } = {
  device: (d) => `${d.hostname} ${d.tunnel_ip}`,
  'security-group': (g) => g.description,
  organization: (o) => o.name,
};

const HEADERS = ['EVENT', 'KIND', 'REVISION', 'ID', 'NAME'];
/** Fixed widths, since the stream has no rows to measure up front (an id is 36 characters). */
const MIN_WIDTHS = [8, 14, 8, 36];

function follow<K extends WatchKind>(informer: Informer<K>, print: (type: ChangeType, kind: K, o: KindValue[K]) => void): void {
  informer.onAdd((o) => print('ADDED', informer.kind, o));
  informer.onUpdate((_old, o) => print('MODIFIED', informer.kind, o));
  informer.onDelete((o) => print('DELETED', informer.kind, o));
}

export const watchCommand: RemoteCommand = {
  kind: 'remote',
  name: 'watch',
  args: '<kind>...',
  summary: 'print every change of devices, security groups or the organization until Ctrl-C',
  details: [
    `<kind>: ${WATCH_KINDS.join(', ')} (plurals, underscores and short forms such as sgs work too), or all.`,
    'First every existing object (ADDED), then each change as it happens. The watch never gives up on',
    'a server restart or a broken connection: it resumes where it was (nothing missed, nothing',
    'twice), printing "reconnecting…" on stderr while it retries. It ends with Ctrl-C (exit 0), or with',
    'exit 1 when the token is refused or the organization is gone.',
    'Tables have the columns EVENT KIND REVISION ID NAME; json prints one {"type","kind","object"}',
    'line per change, yaml one document per change.',
  ].join('\n'),
  flags: ['org', 'output'],
  examples: ['fleetplane ctl watch devices --org acme', 'fleetplane ctl watch all --org acme -o json | jq .object.id'],
  async run(ctx, args) {
    const kinds = watchKinds(args);
    const org = await ctx.org();
    const informers = cliInformers(ctx, org.id);
    const table = ctx.out.forPeople ? new TableStream(ctx.out.writer, HEADERS, [], MIN_WIDTHS) : undefined;
    const print = <K extends WatchKind>(type: ChangeType, kind: K, o: KindValue[K]): void => {
      const summary: (o: KindValue[K]) => string = SUMMARY[kind];
      if (table) table.row([type, kind, String(o.revision).padStart(8), o.id, summary(o)]);
      else ctx.out.streamed({ type, kind, object: o });
    };
    for (const kind of kinds) {
      if (kind === 'device') follow(informers.informer('device'), print);
      else if (kind === 'security-group') follow(informers.informer('security-group'), print);
      else follow(informers.informer('organization'), print);
    }
    await followInformers(ctx, informers);
  },
};
