import type { KindValue, WatchKind } from '../../protocol/wire.js';
import type { ChangeType } from './change-type.js';
import type { CtlContext, OrgRef } from './context.js';
import { cliInformers, followInformers } from './informer-session.js';
import type { Column } from './output.js';
import { TableStream } from './table.js';

/**
 * `<resource> list --watch`: the list, then one line per change until
 * Ctrl-C, as `kubectl get -w`. Tables get an EVENT column (ADDED, MODIFIED,
 * DELETED; the listed rows are ADDED); json and yaml print one
 * `{type, object}` document per row. Built on the SDK's informers, so it
 * resumes across server restarts without printing anything twice, and a
 * relist after compaction prints only real differences.
 */
export async function watchList<K extends WatchKind, T>(
  ctx: CtlContext,
  org: OrgRef,
  kind: K,
  columns: ReadonlyArray<Column<T>>,
  toRow: (object: KindValue[K]) => T,
): Promise<void> {
  const informers = cliInformers(ctx, org.id);
  const informer = informers.informer(kind);
  const shown = ctx.out.columns(columns);
  let table: TableStream | undefined;
  let live = false;
  const print = (type: ChangeType, object: KindValue[K]): void => {
    const row = toRow(object);
    if (table) table.row([type, ...ctx.out.cells(row, shown)]);
    else ctx.out.streamed({ type, object: row });
  };
  // Changes before the first sync are in the listing printed at sync.
  informer.onAdd((o) => live && print('ADDED', o));
  informer.onUpdate((_old, o) => live && print('MODIFIED', o));
  informer.onDelete((o) => live && print('DELETED', o));
  await followInformers(ctx, informers, {
    onSynced: () => {
      const listed = informer.list().sort((a, b) => a.revision - b.revision);
      if (ctx.out.forPeople) {
        const rows = listed.map((o) => ['ADDED', ...ctx.out.cells(toRow(o), shown)]);
        table = new TableStream(ctx.out.writer, ['EVENT', ...shown.map((c) => c.header)], rows);
      } else for (const o of listed) print('ADDED', o);
      live = true;
    },
  });
}
