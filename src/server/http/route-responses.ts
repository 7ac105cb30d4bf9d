import { Type, type TSchema } from '@sinclair/typebox';
import { ERRORS, ErrorResponse, HEADERS, MEDIA, type ErrorCode } from '../../protocol/index.js';

/*
 * Route response schemas written for the OpenAPI document: each response
 * has its status, a description and the headers the server sends with it.
 * The server serializes bodies as they are (app.ts), so these only document.
 */

/** Response headers the API sends, as OpenAPI describes them. */
export const RESPONSE_HEADERS = {
  etag: {
    [HEADERS.etag]: {
      type: 'string',
      description: 'The revision, as `"<revision>"`: of the object, or of the organization a list is consistent with. Send it back in If-Match (writes) or If-None-Match (lists).',
    },
  },
  revision: {
    [HEADERS.revision]: { type: 'integer', minimum: 0, description: 'The organization revision the list is consistent with (plain lists).' },
  },
  /** A policy document's (docs/protocol.md "Policy document"). */
  policyEtag: {
    [HEADERS.etag]: { type: 'string', description: '`"<16 hex>"`: a hash of the document\'s text. Send it back in If-Match.' },
  },
  retryAfter: {
    [HEADERS.retryAfter]: { type: 'integer', minimum: 1, description: 'Seconds to wait before retrying; add jitter.' },
  },
} as const;

type HeaderSet = (typeof RESPONSE_HEADERS)[keyof typeof RESPONSE_HEADERS];

/** A JSON response: its description, body schema and headers. */
export function json<T extends TSchema>(description: string, schema: T, ...headers: HeaderSet[]) {
  return {
    description,
    ...(headers.length > 0 ? { headers: Object.assign({}, ...headers) as Record<string, unknown> } : {}),
    content: { [MEDIA.json]: { schema } },
  };
}

/** A response without a body (204, 304). */
export function empty(description: string, ...headers: HeaderSet[]) {
  return Type.Null({ description, ...(headers.length > 0 ? { headers: Object.assign({}, ...headers) as Record<string, unknown> } : {}) });
}

/** HTTP statuses of the error catalog. */
type ErrorStatus = (typeof ERRORS)[ErrorCode]['status'];

/** What each error status means on this route, when the catalog's own words are not enough. */
type ErrorNotes = Partial<Record<ErrorStatus, string>>;

/**
 * Error responses (the error body) for `statuses`, each described by the
 * catalog's codes of that status; 503 also names Retry-After when the route
 * sends it. 500 (`internal`) is always included: any route can fail so; and
 * 415 wherever 413 is, since a route that reads a body refuses one that isn't JSON.
 */
export function errors<S extends ErrorStatus>(statuses: readonly S[], notes: ErrorNotes = {}, opts: { retryAfter?: boolean } = {}) {
  const out = {} as Record<S | 415 | 500, ReturnType<typeof json<typeof ErrorResponse>>>;
  const all = new Set<S | 415 | 500>([...statuses, 500]);
  if ((statuses as readonly number[]).includes(413)) all.add(415);
  for (const status of [...all].sort()) {
    const codes = (Object.keys(ERRORS) as ErrorCode[]).filter((c) => ERRORS[c].status === status);
    const catalog = codes.map((c) => `\`${c}\`: ${ERRORS[c].message}`).join(' ');
    const description = notes[status] ? `${notes[status]} (${catalog})` : catalog;
    out[status] = status === 503 && opts.retryAfter ? json(description, ErrorResponse, RESPONSE_HEADERS.retryAfter) : json(description, ErrorResponse);
  }
  return out;
}

/** Request headers of conditional requests, for a route's `headers` schema. */
export const IfMatchHeaders = Type.Object({
  [HEADERS.ifMatch]: Type.Optional(
    Type.String({ description: 'Write only if the current revision is this one (`"<revision>"`, as ETag); 412 otherwise.' }),
  ),
});

export const IfNoneMatchHeaders = Type.Object({
  [HEADERS.ifNoneMatch]: Type.Optional(
    Type.String({ description: 'The ETag of the list last received: 304 without a body when nothing changed since (plain lists only).' }),
  ),
});
