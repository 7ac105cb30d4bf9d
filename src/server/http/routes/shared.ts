import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatEtag, HEADERS, parseEtag } from '../../../protocol/index.js';
import type { ChangeRow, ListPage, ListParams } from '../../store/index.js';
import type { ServerContext } from '../context.js';

export function ifMatchOf(req: FastifyRequest): string | undefined {
  const v = req.headers[HEADERS.ifMatch];
  return typeof v === 'string' ? v : undefined;
}

/** True (and the 304 sent) when the client's If-None-Match names `revision`. */
function notModified(req: FastifyRequest, reply: FastifyReply, revision: number): boolean {
  const header = req.headers[HEADERS.ifNoneMatch];
  if (typeof header !== 'string') return false;
  const matches = header.split(',').some((part) => parseEtag(part) === revision || part.trim() === '*');
  if (!matches) return false;
  void reply.header(HEADERS.etag, formatEtag(revision)).status(304).send();
  return true;
}

/**
 * The polling fast path: a plain list whose If-None-Match names the current
 * head gets 304 from one cheap query, without reading any item.
 */
export async function answeredNotModified(
  req: FastifyRequest,
  reply: FastifyReply,
  ctx: ServerContext,
  orgId: string,
  query: ListParams,
): Promise<boolean> {
  const plain = query.gt_revision === undefined && query.limit === undefined && query.after === undefined;
  if (!plain || typeof req.headers[HEADERS.ifNoneMatch] !== 'string') return false;
  const head = (await ctx.store.changes.heads([orgId])).get(orgId);
  return head !== undefined && notModified(req, reply, head.head);
}

type TombstoneItem = { id: string; revision: number; deleted: true };

/** The list envelope with the revision headers (docs/protocol.md "Lists"). */
export function sendList<T, R extends FastifyReply>(reply: R, page: ListPage, live: (row: ChangeRow) => T): R {
  const items: (T | TombstoneItem)[] = page.rows.map((row) =>
    row.deleted ? { id: row.id, revision: row.revision, deleted: true as const } : live(row),
  );
  void reply.header(HEADERS.revision, String(page.revision)).header(HEADERS.etag, formatEtag(page.revision));
  void reply.send(page.next !== undefined ? { items, next: page.next } : { items });
  return reply;
}

export function withEtag<T extends { revision: number }>(reply: FastifyReply, value: T): T {
  void reply.header(HEADERS.etag, formatEtag(value.revision));
  return value;
}
