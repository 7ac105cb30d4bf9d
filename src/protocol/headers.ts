/** HTTP header names and media types used on the wire. */
export const HEADERS = {
  authorization: 'authorization',
  revision: 'x-fleetplane-revision',
  etag: 'etag',
  ifNoneMatch: 'if-none-match',
  ifMatch: 'if-match',
  contentType: 'content-type',
  contentLength: 'content-length',
  transferEncoding: 'transfer-encoding',
  cacheControl: 'cache-control',
  connection: 'connection',
  cookie: 'cookie',
  setCookie: 'set-cookie',
  origin: 'origin',
  location: 'location',
  userAgent: 'user-agent',
  /** Seconds to wait before retrying a 429 or 503 (RFC 9110); clients add jitter. */
  retryAfter: 'retry-after',
  /** On a relay session's upgrade answer: the id of the replica holding the session. */
  replica: 'x-fleetplane-replica',
  /** `nosniff` on every response: a browser takes each body as its Content-Type says, never as a script or page it guessed. */
  contentTypeOptions: 'x-content-type-options',
  /** On `GET .../policy`: `managed` when a policy document owns the organization's access, `unmanaged` when the text was generated from its objects. */
  policyState: 'x-fleetplane-policy',
} as const;

export const MEDIA = {
  json: 'application/json',
  watch: 'application/json;stream=watch',
  /** A policy document (docs/protocol.md "Policy document"); a PUT also takes `application/x-yaml` and `text/plain`. */
  yaml: 'application/yaml',
} as const;

/** `"<revision>"`: the ETag and If-Match form of a revision. */
export function formatEtag(revision: number): string {
  return `"${revision}"`;
}

/** Parses `"<revision>"` (or `W/"<revision>"`, or a bare number); undefined when it isn't one. */
export function parseEtag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(?:W\/)?"?(\d{1,16})"?$/.exec(value.trim());
  if (!m || m[1] === undefined) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}
