import type { TagCaller } from './tag-ownership.js';
import { SECRET_PREFIX } from '../../protocol/index.js';
import type { Database } from '../db/index.js';
import type { ApiKeyCreate, CreatedOrgToken, OrgToken, OrgTokenCreate, RegistrationKeyCreate } from '../../protocol/index.js';
import type { TokenPrincipal } from '../principal/index.js';
import * as creds from './credentials.js';
import * as apiKeys from './api-keys.js';
import * as memberWrites from './member-writes.js';
import { hashSecret, sameHash } from './secrets.js';
import type { TokenIndex } from './token-index.js';
import { afterCommit, epochMs } from './token-index-change.js';
import type { Maker } from './makers.js';

/**
 * Bearer credentials: organization tokens, users' API keys and
 * registration keys, and resolving a presented secret to its principal.
 * A created token authenticates, and a revoked one stops, once its write
 * committed. Members are bound, so they may be passed as callbacks.
 */
export class CredentialRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly tokens: TokenIndex,
  ) {
    this.#db = db;
  }

  /**
   * Resolves a bearer secret: the admin token and known organization and
   * device tokens in memory (the token index), anything else in the database.
   * Undefined: no valid credential.
   */
  authenticate = async (secret: string, adminHash: string): Promise<TokenPrincipal | undefined> => {
    const hash = hashSecret(secret);
    if (sameHash(hash, adminHash)) return { type: 'admin' };
    if (secret.startsWith(SECRET_PREFIX.registrationKey)) return creds.authenticate(this.#db, secret, adminHash);
    const known = this.tokens.get(hash);
    if (known) return known;
    const found = await creds.lookupToken(this.#db, hash);
    if (found) this.tokens.add(hash, found);
    return found?.principal;
  };

  /** Enters every valid token into the index (at start): reconnecting agents cost no query. */
  loadTokens = async (): Promise<void> => {
    for (const { hash, token } of await creds.validTokens(this.#db, this.tokens.limit)) this.tokens.add(hash, token);
  };

  /** Creates an organization token made by `maker` (it ends with its maker); the secret is returned only here. */
  createOrgToken = async (orgId: string, input: OrgTokenCreate, maker: Maker): Promise<CreatedOrgToken> => {
    const made = await afterCommit(this.tokens, this.#db.transaction((tx) => creds.createOrgToken(tx, orgId, input, maker)), ({ created, effectiveExpiresAt }) => ({
      added: [
        {
          hash: hashSecret(created.token),
          token: { principal: { type: 'org', tokenId: created.id, orgId, role: created.role }, expiresAt: epochMs(effectiveExpiresAt) },
        },
      ],
    }));
    return made.created;
  };
  listOrgTokens = (orgId: string) => creds.listOrgTokens(this.#db, orgId);
  /** Revokes a token and what it made; all stop authenticating here once committed, elsewhere through the revocation follower. */
  revokeOrgToken = async (orgId: string, id: string): Promise<void> => {
    await afterCommit(this.tokens, this.#db.transaction((tx) => creds.revokeOrgToken(tx, orgId, id)), (revoked) => ({ revoked }));
  };
  /** An owner (or the admin token) makes a token rest on itself; the tokens whose makers changed are looked up again. */
  reparentOrgToken = async (orgId: string, id: string, to: creds.ReparentTo): Promise<OrgToken> => {
    const { token } = await afterCommit(this.tokens, this.#db.transaction((tx) => creds.reparentOrgToken(tx, orgId, id, to)), ({ moved }) => ({ forgotten: moved }));
    return token;
  };

  /** Creates a user's API key; the secret is returned only here. */
  createApiKey = async (userId: string, input: ApiKeyCreate) => {
    const { created } = await afterCommit(this.tokens, memberWrites.createApiKey(this.#db, userId, input), ({ created, hash }) => ({
      added: [
        {
          hash,
          token: {
            principal: { type: 'user', credential: 'api_key', tokenId: created.id, userId, serverAdmin: false, keyRole: created.role, keyOrgIds: created.organizations },
            expiresAt: Date.parse(created.expires_at),
          },
        },
      ],
    }));
    return created;
  };
  listApiKeys = (userId: string) => apiKeys.listApiKeys(this.#db, userId);
  /** Revokes an API key and what it made (before keys were refused that). */
  revokeApiKey = async (userId: string, id: string): Promise<void> => {
    await afterCommit(this.tokens, memberWrites.revokeApiKey(this.#db, userId, id), (revoked) => ({ revoked }));
  };

  /** Creates a registration key made by `maker`, expiring as `terms` say; the secret is returned only here. */
  createRegistrationKey = (orgId: string, input: RegistrationKeyCreate, maker: Maker, terms: creds.RegistrationKeyTerms, tagCaller: TagCaller) =>
    this.#db.transaction((tx) => creds.createRegistrationKey(tx, orgId, input, maker, terms, tagCaller));
  reparentRegistrationKey = (orgId: string, id: string, to: creds.ReparentTo) =>
    this.#db.transaction((tx) => creds.reparentRegistrationKey(tx, orgId, id, to));
  listRegistrationKeys = (orgId: string) => creds.listRegistrationKeys(this.#db, orgId);
  getRegistrationKey = (orgId: string, id: string) => creds.getRegistrationKey(this.#db, orgId, id);
  deleteRegistrationKey = (orgId: string, id: string) => this.#db.transaction((tx) => creds.deleteRegistrationKey(tx, orgId, id));
}
