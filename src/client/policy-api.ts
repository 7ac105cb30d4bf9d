import { HEADERS, MEDIA, QUERY, paths, type PolicyApplyResult, type PolicyReleaseResult } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { ProtocolError } from './errors.js';
import { isRecord, isRevision } from './guards.js';
import { readText, type HttpTransport } from './http-transport.js';

/** An organization's policy document as `GET .../policy` serves it. */
export interface PolicyText {
  /** The document exactly as last applied (comments, key order), or generated from the objects when `managed` is false. */
  text: string;
  /** `"<16 hex>"`: send it back as `ifMatch` to apply only over this text. */
  etag: string;
  /** A document owns the organization's access; false: `text` was generated from its objects (applying it unchanged changes nothing). */
  managed: boolean;
}

export interface PolicyApplyOptions extends CallOptions {
  /** Check the document and report what would change, writing nothing. */
  dryRun?: boolean | undefined;
  /**
   * Apply only if the document is still the one of this ETag (as `get`
   * returned it; a bare hex string is quoted): else 412 → ConflictError
   * `precondition_failed`, nothing changed.
   */
  ifMatch?: string | undefined;
}

const OPS = new Set(['add', 'remove', 'change']);

function isPolicyApplyResult(v: unknown): v is PolicyApplyResult {
  if (!isRecord(v) || !isRecord(v['tests']) || !Array.isArray(v['changes'])) return false;
  const { tests, etag } = v;
  return (
    typeof v['managed'] === 'boolean' &&
    typeof v['applied'] === 'boolean' &&
    typeof v['dry_run'] === 'boolean' &&
    typeof etag === 'string' &&
    isRevision(v['revision']) &&
    isRevision(tests['total']) &&
    isRevision(tests['passed']) &&
    v['changes'].every((c) => isRecord(c) && typeof c['op'] === 'string' && OPS.has(c['op']) && typeof c['path'] === 'string')
  );
}

function isPolicyReleaseResult(v: unknown): v is PolicyReleaseResult {
  return isRecord(v) && v['managed'] === false && isRevision(v['revision']);
}

/** The If-Match form of an ETag: quoted unless it already is (or is weak or `*`). */
function quoted(etag: string): string {
  return /^(?:W\/)?".*"$|^\*$/.test(etag) ? etag : `"${etag}"`;
}

/**
 * `/api/organizations/{org}/policy` (docs/protocol.md "Policy document").
 * A document that does not parse or validate is a ValidationError
 * `policy_invalid` with `details` {path, line, column}; one whose tests fail
 * a ValidationError `policy_test_failed` with `details.failures`
 * [{index, test, reason}]. Neither changes anything.
 */
export class PolicyApi {
  readonly #transport: HttpTransport;

  constructor(transport: HttpTransport) {
    this.#transport = transport;
  }

  /** The document's text, its ETag, and whether it manages the organization (read scope). */
  async get(org: string, opts: CallOptions = {}): Promise<PolicyText> {
    const path = paths.policy(org);
    const res = await this.#transport.send({ method: 'GET', path, accept: MEDIA.yaml, signal: opts.signal });
    const call = `GET ${path}`;
    const text = await readText(res, call, opts.signal);
    const etag = res.headers.get(HEADERS.etag);
    const state = res.headers.get(HEADERS.policyState);
    if (etag === null || (state !== 'managed' && state !== 'unmanaged')) {
      throw new ProtocolError({
        code: 'invalid_response',
        status: res.status,
        message: `${call}: expected the ${HEADERS.etag} and ${HEADERS.policyState} headers, got ${JSON.stringify({ etag, state })}`,
      });
    }
    return { text, etag, managed: state === 'managed' };
  }

  /**
   * Applies `text` (YAML) as one revision, its tests first (admin); with
   * `dryRun`, only checks it. The result says what changed (or would) and
   * the organization's revision.
   */
  apply(org: string, text: string, opts: PolicyApplyOptions = {}): Promise<PolicyApplyResult> {
    return this.#transport.json(
      {
        method: 'PUT',
        path: paths.policy(org),
        query: { [QUERY.dryRun]: opts.dryRun === true ? true : undefined },
        text: { body: text, type: MEDIA.yaml },
        headers: { [HEADERS.ifMatch]: opts.ifMatch === undefined ? undefined : quoted(opts.ifMatch) },
        signal: opts.signal,
      },
      isPolicyApplyResult,
      'a policy apply result',
    );
  }

  /** Hands the organization back to its objects, with the same effect (admin); done at once when no document manages it. */
  release(org: string, opts: CallOptions = {}): Promise<PolicyReleaseResult> {
    return this.#transport.json({ method: 'DELETE', path: paths.policy(org), signal: opts.signal }, isPolicyReleaseResult, 'a policy release result');
  }
}
