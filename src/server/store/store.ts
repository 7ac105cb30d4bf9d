import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import { TokenIndex } from './token-index.js';
import { Logins } from './logins.js';
import { OrganizationRepository } from './organization-repository.js';
import { DeviceRepository } from './device-repository.js';
import { SecurityGroupRepository } from './security-group-repository.js';
import { PolicyRepository } from './policy-repository.js';
import { CredentialRepository } from './credential-repository.js';
import { MemberRepository } from './member-repository.js';
import { ChangeLog } from './change-log.js';
import { ConvergenceRepository } from './convergence-repository.js';
import { AuditRepository } from './audit-repository.js';
import { ReplicaRepository } from './replica-repository.js';

/** Tokens kept in memory at most: about 200 bytes each. */
const TOKEN_INDEX_LIMIT = 1_000_000;

/**
 * The desired state of every organization, on PGlite or PostgreSQL, as one
 * repository per area. Every write takes its organization's next revision in
 * the writing transaction and rings the bus; reads by revision serve lists
 * and watch streams. What reads and writes the database goes through these
 * repositories, never around them.
 */
export class Store {
  /** Valid organization, device and user tokens in memory (see TokenIndex). */
  readonly tokens = new TokenIndex(TOKEN_INDEX_LIMIT);

  readonly organizations: OrganizationRepository;
  readonly devices: DeviceRepository;
  readonly securityGroups: SecurityGroupRepository;
  readonly policy: PolicyRepository;
  /** Organization tokens, API keys, registration keys, and authenticating a secret. */
  readonly credentials: CredentialRepository;
  /** Memberships and invitations. */
  readonly members: MemberRepository;
  /** Lists, change reads and compaction: what list and watch requests read. */
  readonly changes: ChangeLog;
  readonly convergence: ConvergenceRepository;
  readonly audit: AuditRepository;
  readonly replicas: ReplicaRepository;

  #logins: Logins | undefined;

  /** Users, sessions and pending logins (docs/protocol.md "Users and login"). */
  get logins(): Logins {
    this.#logins ??= new Logins(this.#db, this.tokens);
    return this.#logins;
  }

  readonly #db: Database;

  constructor(
    db: Database,
    readonly bus: SignalBus,
    /** Devices not seen for longer than this are stale, and a PUT's `online` no longer counts. */
    readonly staleAfterSeconds = 90,
  ) {
    this.#db = db;
    this.organizations = new OrganizationRepository(db, bus, this.tokens);
    this.devices = new DeviceRepository(db, bus, this.tokens, staleAfterSeconds);
    this.securityGroups = new SecurityGroupRepository(db, bus);
    this.policy = new PolicyRepository(db, bus);
    this.credentials = new CredentialRepository(db, this.tokens);
    this.members = new MemberRepository(db, this.tokens);
    this.changes = new ChangeLog(db);
    this.convergence = new ConvergenceRepository(db, staleAfterSeconds);
    this.audit = new AuditRepository(db);
    this.replicas = new ReplicaRepository(db);
  }
}
