import {
  paths,
  type CreatedOrgToken,
  type CreatedRegistrationKey,
  type OrgToken,
  type OrgTokenCreate,
  type OwnRegistrationKey,
  type RegistrationKey,
  type RegistrationKeyCreate,
} from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { isRecord, listOf } from './guards.js';
import type { HttpTransport } from './http-transport.js';

function withSecret<T>(field: string): (v: unknown) => v is T {
  return (v: unknown): v is T => isRecord(v) && typeof v['id'] === 'string' && typeof v[field] === 'string';
}

function hasId<T>(): (v: unknown) => v is T {
  return (v: unknown): v is T => isRecord(v) && typeof v['id'] === 'string';
}

/** `/api/organizations/{org}/registration_keys[/{id}]`. The key itself is returned once, by `create`. */
/** `GET /api/registration_key`'s answer, from any server since v1.3: `organization_name` came in v1.20. */
export type OwnRegistrationKeyAnswer = RegistrationKey & Partial<Pick<OwnRegistrationKey, 'organization_name'>>;

export class RegistrationKeysApi {
  constructor(private readonly transport: HttpTransport) {}

  create(org: string, body: RegistrationKeyCreate = {}, opts: CallOptions = {}): Promise<CreatedRegistrationKey> {
    return this.transport.json(
      { method: 'POST', path: paths.registrationKeys(org), body, signal: opts.signal },
      withSecret<CreatedRegistrationKey>('key'),
      'the created registration key',
    );
  }

  async list(org: string, opts: CallOptions = {}): Promise<RegistrationKey[]> {
    const body = await this.transport.json(
      { method: 'GET', path: paths.registrationKeys(org), signal: opts.signal },
      listOf(hasId<RegistrationKey>()),
      'a list of registration keys',
    );
    return body.items;
  }

  /** One key by id, without its secret. */
  get(org: string, id: string, opts: CallOptions = {}): Promise<RegistrationKey> {
    return this.transport.json({ method: 'GET', path: paths.registrationKey(org, id), signal: opts.signal }, hasId<RegistrationKey>(), 'the registration key');
  }

  async delete(org: string, id: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.registrationKey(org, id), signal: opts.signal });
  }

  /** An owner (or the admin token) makes the key rest on itself instead of the credential that made it. */
  reparent(org: string, id: string, opts: CallOptions = {}): Promise<RegistrationKey> {
    return this.transport.json({ method: 'POST', path: paths.registrationKeyReparent(org, id), signal: opts.signal }, hasId<RegistrationKey>(), 'the registration key');
  }

  /**
   * `GET /api/registration_key` with `key` as the bearer token: the key's own
   * object (without its secret), whose `organization_id` is where it enrolls,
   * and `organization_name` that organization's name (undefined from a
   * server before v1.20). AuthError when the key is unknown, used up or
   * expired.
   */
  own(key: string, opts: CallOptions = {}): Promise<OwnRegistrationKeyAnswer> {
    return this.transport.json(
      { method: 'GET', path: paths.ownRegistrationKey(), token: key, signal: opts.signal },
      (v: unknown): v is OwnRegistrationKeyAnswer =>
        isRecord(v) && typeof v['id'] === 'string' && typeof v['organization_id'] === 'string' && (v['organization_name'] === undefined || typeof v['organization_name'] === 'string'),
      'the registration key',
    );
  }
}

/** `/api/organizations/{org}/tokens[/{id}]`. The token itself is returned once, by `create`, in `token`. */
export class TokensApi {
  constructor(private readonly transport: HttpTransport) {}

  create(org: string, body: OrgTokenCreate, opts: CallOptions = {}): Promise<CreatedOrgToken> {
    return this.transport.json(
      { method: 'POST', path: paths.tokens(org), body, signal: opts.signal },
      withSecret<CreatedOrgToken>('token'),
      'the created token',
    );
  }

  async list(org: string, opts: CallOptions = {}): Promise<OrgToken[]> {
    const body = await this.transport.json(
      { method: 'GET', path: paths.tokens(org), signal: opts.signal },
      listOf(hasId<OrgToken>()),
      'a list of tokens',
    );
    return body.items;
  }

  /** Revokes the token and what it made; watch streams opened with them end with a `forbidden` error. */
  async delete(org: string, id: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.token(org, id), signal: opts.signal });
  }

  /**
   * An owner (or the admin token) makes the token rest on itself instead of
   * the credential that made it, so that it outlives that credential.
   */
  reparent(org: string, id: string, opts: CallOptions = {}): Promise<OrgToken> {
    return this.transport.json({ method: 'POST', path: paths.tokenReparent(org, id), signal: opts.signal }, hasId<OrgToken>(), 'the token');
  }
}
