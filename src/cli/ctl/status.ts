import type { Convergence } from '../../client/index.js';
import { age } from './age.js';
import type { RemoteCommand } from './command-spec.js';
import type { CtlContext, OrgRef } from './context.js';
import { noExtraArgs } from './flag-values.js';
import { OutageLines } from './describe-error.js';
import { CLI_BACKOFF } from './informer-session.js';
import { formatTable } from './table.js';

type NotConverged = Convergence['not_converged'][number];

/** The convergence for people: the head, the counts, and the devices not at the head. */
export function formatStatus(org: OrgRef, c: Convergence, now: number): string {
  const name = org.name === undefined ? org.id : `${org.name} (${org.id})`;
  const counts = formatTable(
    ['DEVICES', 'AT HEAD', 'BEHIND', 'ERROR', 'STALE', 'ONLINE'],
    [[c.devices, c.at_head, c.behind, c.error, c.stale, c.online].map(String)],
  );
  const lines = [`organization ${name} at revision ${c.revision}`, '', counts.trimEnd()];
  const notConverged = c.behind + c.error + c.stale;
  if (notConverged > 0) {
    const shown = c.not_converged.length < notConverged ? ` (the first ${c.not_converged.length} of ${notConverged})` : '';
    const rows = c.not_converged.map((d: NotConverged) => [
      d.hostname,
      d.id,
      d.applied_revision === null ? '-' : String(d.applied_revision),
      age(d.last_seen, now),
      d.apply_error === null ? '-' : d.apply_error.replace(/\s+/g, ' '),
    ]);
    lines.push('', `not converged${shown}:`, formatTable(['HOSTNAME', 'ID', 'APPLIED', 'LAST SEEN', 'ERROR'], rows).trimEnd());
  } else if (c.devices > 0) lines.push('', `every device applied revision ${c.revision}`);
  return `${lines.join('\n')}\n`;
}

async function withName(ctx: CtlContext): Promise<OrgRef> {
  const org = await ctx.org();
  if (org.name !== undefined || !ctx.out.forPeople) return org;
  return { id: org.id, name: (await ctx.client.organizations.get(org.id, { signal: ctx.signal })).name };
}

export const statusCommand: RemoteCommand = {
  kind: 'remote',
  name: 'status',
  summary: "an organization's fleet at a glance: head revision, convergence counts, devices not converged",
  details: [
    'Counts (from GET .../convergence): AT HEAD applied the current revision; ERROR report an apply error;',
    'STALE were not seen for longer than the server\'s --stale-after; BEHIND are the rest; ONLINE hold a',
    'connection now. Then the devices not at the head with LAST SEEN (5s, 3m, 2h, 4d ago; never).',
    '--watch prints it again at each change until Ctrl-C, reconnecting by itself (json: one line each).',
  ].join('\n'),
  flags: ['org', 'output', { name: 'watch', help: 'print the status again at each change until Ctrl-C' }],
  examples: ['fleetplane ctl status --org acme', 'fleetplane ctl status --org acme --watch', 'fleetplane ctl status -o json | jq .behind'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const org = await withName(ctx);
    if (ctx.flags.boolean('watch') !== true) {
      const c = await ctx.client.convergence(org.id, { signal: ctx.signal });
      if (ctx.out.forPeople) ctx.out.writer.write(formatStatus(org, c, ctx.out.now()));
      else ctx.out.document(c);
      return;
    }
    let first = true;
    const outage = new OutageLines((line) => ctx.stderr.write(line));
    const values = ctx.client.organizations.followConvergence(org.id, {
      signal: ctx.signal ?? new AbortController().signal,
      backoff: CLI_BACKOFF,
      onRetry: (r) => outage.retrying(r.delayMs, r.error),
    });
    for await (const c of values) {
      outage.back();
      if (ctx.out.forPeople) ctx.out.writer.write(`${first ? '' : '\n'}${formatStatus(org, c, ctx.out.now())}`);
      else ctx.out.streamed(c);
      first = false;
    }
  },
};
