import type { Informer, InformerLogger, SharedInformersOptions, WatchKind } from '../../../src/client/index.js';

export const silentLogger: InformerLogger = { warn: () => undefined, error: () => undefined };

/** Fast retries so tests don't wait for production backoff. */
export const FAST: SharedInformersOptions = { backoff: { initialMs: 1, maxMs: 20 }, logger: silentLogger };

/** Records an informer's callbacks as `add id@rev`, `update id@old->new`, `delete id@rev`. */
export function record<K extends WatchKind>(informer: Informer<K>): string[] {
  const log: string[] = [];
  informer.onAdd((o) => log.push(`add ${o.id}@${o.revision}`));
  informer.onUpdate((old, o) => log.push(`update ${o.id}@${old.revision}->${o.revision}`));
  informer.onDelete((o) => log.push(`delete ${o.id}@${o.revision}`));
  return log;
}
