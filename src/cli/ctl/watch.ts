import { WATCH_KINDS, type WatchKind } from '../../protocol/index.js';
import { TransportError, type StreamEvent, type Watch } from '../../client/index.js';
import { intFlag } from './args.js';
import { orgOf, type CtlContext } from './context.js';
import { UsageError } from './usage.js';

const KIND_NAMES: Readonly<Record<string, readonly WatchKind[]>> = {
  all: WATCH_KINDS,
  device: ['device'],
  devices: ['device'],
  'security-group': ['security-group'],
  'security-groups': ['security-group'],
  organization: ['organization'],
  organizations: ['organization'],
  orgs: ['organization'],
};

export function parseKinds(names: readonly string[]): WatchKind[] {
  if (names.length === 0) throw new UsageError(`watch needs at least one kind: ${WATCH_KINDS.join(', ')} or all`);
  const kinds = new Set<WatchKind>();
  for (const name of names) {
    const k = KIND_NAMES[name];
    if (!k) throw new UsageError(`unknown kind ${JSON.stringify(name)}: use ${WATCH_KINDS.join(', ')} or all`);
    for (const kind of k) kinds.add(kind);
  }
  return [...kinds];
}

function summary(event: StreamEvent & { type: 'change' | 'delete' }): string {
  switch (event.kind) {
    case 'device':
      return `${event.value.hostname} ${event.value.tunnel_ip}`;
    case 'security-group':
      return event.value.description;
    case 'organization':
      return event.value.name;
  }
}

/** One line per event for people; bookmarks (keep-alives) are not shown. */
export function formatEvent(event: StreamEvent): string | undefined {
  switch (event.type) {
    case 'change':
    case 'delete':
      return `${String(event.value.revision).padStart(8)}  ${event.kind.padEnd(14)}  ${event.type === 'change' ? 'changed' : 'deleted'}  ${event.value.id}  ${summary(event)}`;
    case 'tail':
      return `${String(event.value.revision).padStart(8)}  ${event.kind.padEnd(14)}  listed; following changes`;
    case 'bookmark':
      return undefined;
  }
}

/** `watch <kinds...>`: streams until interrupted; fails (exit 1) if the stream breaks or the server ends it. */
export async function runWatch(ctx: CtlContext, names: readonly string[]): Promise<void> {
  const org = orgOf(ctx);
  const gt = intFlag('gt-revision', ctx.args.values['gt-revision']);
  const watches: Watch[] = parseKinds(names).map((kind) => (gt === undefined ? { kind } : { kind, gt_revision: gt }));
  for await (const event of ctx.client.watchEvents(org, watches, { signal: ctx.signal })) {
    if (ctx.out.mode === 'json') ctx.out.line(JSON.stringify(event));
    else {
      const line = formatEvent(event);
      if (line !== undefined) ctx.out.line(line);
    }
  }
  if (ctx.signal?.aborted) return;
  throw new TransportError({ code: 'network_error', message: 'the server ended the watch stream' });
}
