import { parseCommandLine, type CommandLineGrammar } from '../../util/command-line.js';
import { DURATION_EXAMPLES, parseDuration } from '../../util/duration.js';
import { didYouMeanFlag } from '../../util/nearest-name.js';
// Leaf modules only: `serve` reads its settings and binds its port before it loads the rest of the server.
import { DEFAULT_POOL_SIZE, EMBEDDED_POOL_SIZE } from '../db/pool-sizes.js';
import { STUN_DEFAULT_ALT_PORT, STUN_DEFAULT_PORT } from '../../protocol/stun.js';

/**
 * Every setting of `fleetplane serve`. Each is a flag and (where named) an
 * environment variable; flags win over the environment, which wins over the
 * default. Durations are in seconds here; the command line and the environment
 * also take units (`10m`, `1h`, `7d`: util/duration.ts).
 */
export interface Settings {
  host: string;
  port: number;
  /** PEM certificate (chain) file: with `tlsKey`, the server speaks HTTPS and reloads both on SIGHUP. */
  tlsCert: string | undefined;
  /** PEM private key file of `tlsCert`. */
  tlsKey: string | undefined;
  /** Data directory of the embedded PostgreSQL (and the admin token file); ignored with `memory` or `databaseUrl`. */
  dataDir: string;
  /** PGlite in memory, for development and tests: nothing is written to disk, nothing survives a restart. */
  memory: boolean;
  /**
   * With `memory`: a file holding a dump of a migrated, empty database
   * (PGlite's `dumpDataDir`) to start from instead of creating one.
   */
  memoryTemplate: string | undefined;
  /** Use this PostgreSQL instead of the embedded one. */
  databaseUrl: string | undefined;
  /**
   * Connections each server process pools to PostgreSQL (LISTEN has its own);
   * undefined: the pool's default (db/DEFAULT_POOL_SIZE, EMBEDDED_POOL_SIZE).
   */
  dbPoolSize: number | undefined;
  adminToken: string | undefined;
  tombstoneRetention: number;
  compactionInterval: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  bookmarkInterval: number;
  tailCacheSize: number;
  /** Bytes a watcher may have queued in its socket before it stops being written to. */
  watchBufferLimit: number;
  slowConsumerTimeout: number;
  /** How often cached organizations' head revisions are re-read (the lost-signal safety net). */
  safetyCheckInterval: number;
  /** How often revoked tokens are looked up to end their streams. */
  revocationCheckInterval: number;
  /** Seconds a stop may take, whatever clients or the database do: past it the server exits anyway. */
  shutdownGrace: number;
  bodyLimit: number;
  /** A device not seen for longer than this counts as stale in /convergence. */
  staleAfter: number;
  bus: 'memory' | 'postgres' | 'redis';
  redisUrl: string | undefined;
  busHelloInterval: number;
  busGapDelay: number;
  workers: number;
  privatePort: number | undefined;
  privateHost: string;
  privateSecret: string | undefined;
  advertisePrivateUrl: string | undefined;
  replicaLeaseTtl: number;
  /** Least time between two status batches (device ACKs and presence), seconds. */
  statusFlushInterval: number;
  /** Bytes of encoded objects the per-organization snapshots of this replica may hold in all. */
  snapshotBudget: number;
  /** Bytes queued to all watchers together; past it the ones with the most queued are closed with slow_consumer. */
  watchQueueLimit: number;
  /** Initial lists streaming at once; more requests wait (up to listQueueTimeout) for a turn. */
  maxConcurrentLists: number;
  /** How long a watch request waits for an initial-list turn before it gets 503 with Retry-After. */
  listQueueTimeout: number;
  /** How long a request's body may take to arrive once the server reads it; past it: 408 and the connection closes. */
  bodyTimeout: number;
  /** Open connections the process accepts (public and private listeners together, at most what its open-files limit allows); more are refused. */
  maxConnections: number;
  /**
   * Open connections one source address may hold on the public listener (0:
   * no limit); undefined: three quarters of the total limit in force.
   */
  maxConnectionsPerSource: number | undefined;
  /** How long a request's headers (and, with TLS, the handshake before them) may take to arrive; past it: 408 and the connection closes. */
  headersTimeout: number;
  /** Lifetime of device tokens issued from now on, seconds (0: they never expire); agents renew before. */
  deviceTokenTtl: number;
  /** Lifetime of a registration key created without `expires_at`, seconds (0: none, only with no maximum). */
  registrationKeyTtl: number;
  /** The longest a registration key may live, seconds (0: no maximum, keys may never expire). */
  registrationKeyMaxTtl: number;
  /** Ephemeral devices offline for longer than this (seconds) are deleted. */
  ephemeralOfflineTimeout: number;
  /** Audit entries older than this (seconds) are deleted (0: kept for ever). */
  auditRetention: number;
  /** The OpenID Connect issuer users sign in with (docs/protocol.md "Users and login"); unset: no user login. */
  oidcIssuer: string | undefined;
  oidcClientId: string | undefined;
  /** The client secret itself (visible in `ps` when given as a flag: prefer the file or the environment). */
  oidcClientSecret: string | undefined;
  /** A file holding the client secret (trailing newline ignored). */
  oidcClientSecretFile: string | undefined;
  oidcClientAuth: 'client_secret_basic' | 'client_secret_post';
  /** Comma-separated scopes; `openid` is always added. */
  oidcScopes: string;
  /** Comma-separated allow lists (all empty: everyone the issuer authenticates may sign in). */
  oidcAllowedEmails: string;
  oidcAllowedDomains: string;
  oidcAllowedSubjects: string;
  oidcRequireVerifiedEmail: boolean;
  /** Comma-separated emails or subjects that are server admins at their first login. */
  oidcAdmins: string;
  /** Seconds of clock skew accepted on ID tokens. */
  oidcClockSkew: number;
  /** Idle lifetime of a user session, seconds; each refresh extends it. */
  sessionTtl: number;
  /** Absolute lifetime of a user session, seconds. */
  sessionMaxAge: number;
  /** The URL browsers reach this server at (the login callback and the CSRF check); default: from each request. */
  publicUrl: string | undefined;
  /** Answer STUN Binding requests (docs/protocol.md "STUN") on UDP `stunPort` and `stunAltPort` of `host`. */
  stun: boolean;
  /** UDP port of the STUN responder (0: any free port). */
  stunPort: number;
  /** The second STUN port: a client asking both learns whether its NAT maps by destination (0: any free port). */
  stunAltPort: number;
  /** Relay WireGuard packets between devices of an organization (docs/protocol.md "Relays"), and be listed as a relay. */
  relay: boolean;
  /** The base URL this replica's relay is listed with (its own address); undefined: listed with null, the server a client reached. */
  relayUrl: string | undefined;
}

export const DEFAULT_SETTINGS: Settings = {
  host: '0.0.0.0',
  port: 8080,
  tlsCert: undefined,
  tlsKey: undefined,
  dataDir: './data',
  memory: false,
  memoryTemplate: undefined,
  databaseUrl: undefined,
  dbPoolSize: undefined,
  adminToken: undefined,
  tombstoneRetention: 86_400,
  compactionInterval: 60,
  logLevel: 'info',
  bookmarkInterval: 15,
  tailCacheSize: 1024,
  // A watcher past it is only a position (resumed from the ring or the database on drain), so its
  // own bytes stay small: 1,000 resuming joiners hold 256 MiB, not 4 GiB.
  watchBufferLimit: 256 * 1024,
  slowConsumerTimeout: 30,
  safetyCheckInterval: 5,
  revocationCheckInterval: 2,
  // Well under systemd's TimeoutStopSec (30 s in deploy/), so a stop is never a SIGKILL.
  shutdownGrace: 20,
  bodyLimit: 1024 * 1024,
  staleAfter: 90,
  bus: 'memory',
  redisUrl: undefined,
  busHelloInterval: 5,
  busGapDelay: 0.2,
  workers: 1,
  privatePort: undefined,
  privateHost: '127.0.0.1',
  privateSecret: undefined,
  advertisePrivateUrl: undefined,
  replicaLeaseTtl: 15,
  statusFlushInterval: 0.1,
  snapshotBudget: 512 * 1024 * 1024,
  watchQueueLimit: 256 * 1024 * 1024,
  maxConcurrentLists: 512,
  listQueueTimeout: 10,
  bodyTimeout: 10,
  // 10,000 agents holding a watch stream and a tunnel each, plus half again for reconnections whose
  // old connection has not closed yet and for operators.
  maxConnections: 30_000,
  // Three quarters of the total limit in force (http/connection-limits.ts): agents behind one NAT share an
  // address, and the whole fleet the default total is sized for (10,000 agents, two connections each) fits
  // behind one, while every other address keeps a quarter of the server.
  maxConnectionsPerSource: undefined,
  // A client sends its headers at once; Node's default (60 s, checked every 30 s) let slow ones hold a connection a minute.
  headersTimeout: 5,
  // Off, as Headscale's node expiry: an expiring credential is a policy an operator chooses.
  deviceTokenTtl: 0,
  // Headscale's pre-auth key default: a key is made to enroll what is being set up now. A leaked reusable key
  // that never expired enrolled devices for ever; Tailscale caps its auth keys at 90 days.
  registrationKeyTtl: 3_600,
  registrationKeyMaxTtl: 7_776_000,
  // Headscale's ephemeral_node_inactivity_timeout default.
  ephemeralOfflineTimeout: 1_800,
  // 90 days: long enough for a quarterly review; 0 keeps everything.
  auditRetention: 7_776_000,
  oidcIssuer: undefined,
  oidcClientId: undefined,
  oidcClientSecret: undefined,
  oidcClientSecretFile: undefined,
  oidcClientAuth: 'client_secret_basic',
  oidcScopes: 'openid,email,profile',
  oidcAllowedEmails: '',
  oidcAllowedDomains: '',
  oidcAllowedSubjects: '',
  oidcRequireVerifiedEmail: true,
  oidcAdmins: '',
  oidcClockSkew: 30,
  // 12 hours idle, 7 days at most: a working day without logging in again, a week without asking the issuer.
  sessionTtl: 43_200,
  sessionMaxAge: 604_800,
  publicUrl: undefined,
  stun: true,
  stunPort: STUN_DEFAULT_PORT,
  stunAltPort: STUN_DEFAULT_ALT_PORT,
  relay: true,
  relayUrl: undefined,
};

type Kind = 'string' | 'int' | 'seconds' | 'bool' | 'bytes';

interface SettingSpec {
  key: keyof Settings;
  flag: string;
  env?: string;
  kind: Kind;
  help: string;
  choices?: readonly string[];
  min?: number;
  max?: number;
}

/** The table `serve --help`, the README and the parser are made from. */
export const SETTING_SPECS: readonly SettingSpec[] = [
  { key: 'host', flag: 'host', env: 'FLEETPLANE_HOST', kind: 'string', help: 'Address to listen on.' },
  { key: 'port', flag: 'port', env: 'FLEETPLANE_PORT', kind: 'int', min: 0, max: 65535, help: 'Port to listen on (0: any free port).' },
  { key: 'tlsCert', flag: 'tls-cert', env: 'FLEETPLANE_TLS_CERT', kind: 'string', help: 'PEM certificate (chain) file; with --tls-key the server speaks HTTPS (reloaded on SIGHUP).' },
  { key: 'tlsKey', flag: 'tls-key', env: 'FLEETPLANE_TLS_KEY', kind: 'string', help: 'PEM private key file of --tls-cert.' },
  { key: 'dataDir', flag: 'data-dir', env: 'FLEETPLANE_DATA_DIR', kind: 'string', help: 'Data directory of the embedded PostgreSQL (the default storage; durable: fsync at every commit).' },
  { key: 'memory', flag: 'memory', env: 'FLEETPLANE_MEMORY', kind: 'bool', help: 'Keep everything in memory (PGlite), for development and tests: NOT durable, nothing survives a restart.' },
  { key: 'memoryTemplate', flag: 'memory-template', env: 'FLEETPLANE_MEMORY_TEMPLATE', kind: 'string', help: 'With --memory: start from this dump of a migrated empty database instead of creating one; a process starting several servers empties a closed one\'s database for the next (for test suites).' },
  { key: 'databaseUrl', flag: 'database-url', env: 'DATABASE_URL', kind: 'string', help: 'PostgreSQL URL (libpq form; ?host=/dir for a Unix socket); replaces the embedded PostgreSQL.' },
  { key: 'dbPoolSize', flag: 'db-pool-size', env: 'FLEETPLANE_DB_POOL_SIZE', kind: 'int', min: 1, max: 1000, help: `Connections each server process pools to PostgreSQL (default: ${DEFAULT_POOL_SIZE} on --database-url, ${EMBEDDED_POOL_SIZE} on the embedded PostgreSQL).` },
  { key: 'adminToken', flag: 'admin-token', env: 'FLEETPLANE_ADMIN_TOKEN', kind: 'string', help: 'Bootstrap admin token (else generated once and kept).' },
  { key: 'tombstoneRetention', flag: 'tombstone-retention', env: 'FLEETPLANE_TOMBSTONE_RETENTION', kind: 'seconds', min: 1, help: 'How long deletes are remembered for resuming watchers.' },
  { key: 'compactionInterval', flag: 'compaction-interval', env: 'FLEETPLANE_COMPACTION_INTERVAL', kind: 'seconds', min: 0.05, help: 'How often expired tombstones are compacted (default: min(60, retention/2)).' },
  { key: 'logLevel', flag: 'log-level', env: 'FLEETPLANE_LOG_LEVEL', kind: 'string', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], help: 'Log level.' },
  { key: 'bookmarkInterval', flag: 'bookmark-interval', env: 'FLEETPLANE_BOOKMARK_INTERVAL', kind: 'seconds', min: 0.05, help: 'Longest silence on a watch stream before a bookmark.' },
  { key: 'tailCacheSize', flag: 'tail-cache-size', env: 'FLEETPLANE_TAIL_CACHE_SIZE', kind: 'int', min: 0, max: 1_000_000, help: 'Encoded events kept per organization (0 disables the cache).' },
  { key: 'watchBufferLimit', flag: 'watch-buffer-limit', env: 'FLEETPLANE_WATCH_BUFFER_LIMIT', kind: 'bytes', min: 16384, help: 'Bytes queued per watcher before writing to it pauses.' },
  { key: 'slowConsumerTimeout', flag: 'slow-consumer-timeout', env: 'FLEETPLANE_SLOW_CONSUMER_TIMEOUT', kind: 'seconds', min: 0.05, help: 'How long a watcher may stay over its buffer limit before it is closed.' },
  { key: 'safetyCheckInterval', flag: 'safety-check-interval', env: 'FLEETPLANE_SAFETY_CHECK_INTERVAL', kind: 'seconds', min: 0.05, help: 'How often cached head revisions are re-read from the database.' },
  { key: 'shutdownGrace', flag: 'shutdown-grace', env: 'FLEETPLANE_SHUTDOWN_GRACE', kind: 'seconds', min: 1, help: 'Longest a stop (SIGTERM) takes: streams get their last line, requests in flight finish, statuses are written; past it the server exits anyway.' },
  { key: 'revocationCheckInterval', flag: 'revocation-check-interval', env: 'FLEETPLANE_REVOCATION_CHECK_INTERVAL', kind: 'seconds', min: 0.05, help: 'How often revoked tokens are looked up to end their watch streams and agent tunnels.' },
  { key: 'bodyLimit', flag: 'body-limit', env: 'FLEETPLANE_BODY_LIMIT', kind: 'bytes', min: 1024, help: 'Largest accepted request body.' },
  { key: 'staleAfter', flag: 'stale-after', env: 'FLEETPLANE_STALE_AFTER', kind: 'seconds', min: 1, help: 'Devices not seen for this long count as stale.' },
  { key: 'bus', flag: 'bus', env: 'FLEETPLANE_BUS', kind: 'string', choices: ['memory', 'postgres', 'redis'], help: 'Signal bus (default: postgres with --database-url or --workers, else memory).' },
  { key: 'redisUrl', flag: 'redis-url', env: 'REDIS_URL', kind: 'string', help: 'Redis URL (agent registry; bus with --bus redis).' },
  { key: 'busHelloInterval', flag: 'bus-hello-interval', env: 'FLEETPLANE_BUS_HELLO_INTERVAL', kind: 'seconds', min: 0.05, help: 'Idle time after which a bus publisher sends a hello.' },
  { key: 'busGapDelay', flag: 'bus-gap-delay', env: 'FLEETPLANE_BUS_GAP_DELAY', kind: 'seconds', min: 0, help: 'How long a sequence gap waits for the missing message.' },
  { key: 'workers', flag: 'workers', env: 'FLEETPLANE_WORKERS', kind: 'int', min: 1, max: 64, help: 'Server processes sharing the port (PostgreSQL only).' },
  { key: 'privatePort', flag: 'private-port', env: 'FLEETPLANE_PRIVATE_PORT', kind: 'int', min: 0, max: 65535, help: 'Port of the replica-to-replica listener.' },
  { key: 'privateHost', flag: 'private-host', env: 'FLEETPLANE_PRIVATE_HOST', kind: 'string', help: 'Address of the replica-to-replica listener.' },
  { key: 'privateSecret', flag: 'private-secret', env: 'FLEETPLANE_PRIVATE_SECRET', kind: 'string', help: 'Shared HS256 secret of the replicas.' },
  { key: 'advertisePrivateUrl', flag: 'advertise-private-url', env: 'FLEETPLANE_ADVERTISE_PRIVATE_URL', kind: 'string', help: 'URL other replicas use to reach this one.' },
  { key: 'replicaLeaseTtl', flag: 'replica-lease-ttl', env: 'FLEETPLANE_REPLICA_LEASE_TTL', kind: 'seconds', min: 1, help: 'Lifetime of a replica lease in the replicas table.' },
  { key: 'statusFlushInterval', flag: 'status-flush-interval', env: 'FLEETPLANE_STATUS_FLUSH_INTERVAL', kind: 'seconds', min: 0.01, max: 10, help: 'Least time between two batched writes of device statuses and presence.' },
  { key: 'snapshotBudget', flag: 'snapshot-budget', env: 'FLEETPLANE_SNAPSHOT_BUDGET', kind: 'bytes', min: 0, help: 'Memory for in-memory organization snapshots that serve initial lists (0: always page the database).' },
  { key: 'watchQueueLimit', flag: 'watch-queue-limit', env: 'FLEETPLANE_WATCH_QUEUE_LIMIT', kind: 'bytes', min: 65536, help: 'Bytes queued to all watchers together (not counting views of the shared snapshot lists) before the ones holding the most are closed (slow_consumer).' },
  { key: 'maxConcurrentLists', flag: 'max-concurrent-lists', env: 'FLEETPLANE_MAX_CONCURRENT_LISTS', kind: 'int', min: 1, max: 1_000_000, help: 'Initial lists paging the database at once; more wait for a turn (lists from memory need none).' },
  { key: 'listQueueTimeout', flag: 'list-queue-timeout', env: 'FLEETPLANE_LIST_QUEUE_TIMEOUT', kind: 'seconds', min: 0, help: 'How long a watch waits for an initial-list turn before 503 with Retry-After.' },
  { key: 'bodyTimeout', flag: 'body-timeout', env: 'FLEETPLANE_BODY_TIMEOUT', kind: 'seconds', min: 0.05, help: 'How long a request body may take to arrive; past it the request gets 408 and its connection is closed.' },
  { key: 'maxConnections', flag: 'max-connections', env: 'FLEETPLANE_MAX_CONNECTIONS', kind: 'int', min: 1, help: 'Open connections accepted in all (lowered to what the open-files limit allows); more are answered 503 and closed.' },
  { key: 'deviceTokenTtl', flag: 'device-token-ttl', env: 'FLEETPLANE_DEVICE_TOKEN_TTL', kind: 'seconds', min: 0, help: 'Lifetime of device tokens issued at enrollment or renewal (0: they never expire); agents renew theirs before it ends.' },
  { key: 'auditRetention', flag: 'audit-retention', env: 'FLEETPLANE_AUDIT_RETENTION', kind: 'seconds', min: 0, help: 'How long audit log entries are kept (0: for ever); older ones are deleted by one replica at a time.' },
  { key: 'registrationKeyTtl', flag: 'registration-key-ttl', env: 'FLEETPLANE_REGISTRATION_KEY_TTL', kind: 'seconds', min: 0, help: 'Lifetime of a registration key created without expires_at (0: none, only with --registration-key-max-ttl 0).' },
  { key: 'registrationKeyMaxTtl', flag: 'registration-key-max-ttl', env: 'FLEETPLANE_REGISTRATION_KEY_MAX_TTL', kind: 'seconds', min: 0, help: 'The longest a registration key may live (0: no maximum, and a key may be made to never expire).' },
  { key: 'ephemeralOfflineTimeout', flag: 'ephemeral-offline-timeout', env: 'FLEETPLANE_EPHEMERAL_OFFLINE_TIMEOUT', kind: 'seconds', min: 0.001, help: 'Devices enrolled with an ephemeral registration key are deleted once offline for longer than this.' },
  { key: 'oidcIssuer', flag: 'oidc-issuer', env: 'FLEETPLANE_OIDC_ISSUER', kind: 'string', help: 'OpenID Connect issuer URL users sign in with (https; http only on loopback). Unset: no user login.' },
  { key: 'oidcClientId', flag: 'oidc-client-id', env: 'FLEETPLANE_OIDC_CLIENT_ID', kind: 'string', help: 'Client id registered at the issuer (redirect URI {public URL}/api/auth/oidc/callback).' },
  { key: 'oidcClientSecretFile', flag: 'oidc-client-secret-file', env: 'FLEETPLANE_OIDC_CLIENT_SECRET_FILE', kind: 'string', help: 'File holding the client secret (preferred: not visible in ps).' },
  { key: 'oidcClientSecret', flag: 'oidc-client-secret', env: 'FLEETPLANE_OIDC_CLIENT_SECRET', kind: 'string', help: 'The client secret itself (as a flag it shows in ps: prefer the file or the environment variable).' },
  { key: 'oidcClientAuth', flag: 'oidc-client-auth', env: 'FLEETPLANE_OIDC_CLIENT_AUTH', kind: 'string', choices: ['client_secret_basic', 'client_secret_post'], help: 'How the server authenticates at the issuer.' },
  { key: 'oidcScopes', flag: 'oidc-scopes', env: 'FLEETPLANE_OIDC_SCOPES', kind: 'string', help: 'Comma-separated scopes asked for (openid is always added).' },
  { key: 'oidcAllowedEmails', flag: 'oidc-allowed-emails', env: 'FLEETPLANE_OIDC_ALLOWED_EMAILS', kind: 'string', help: 'Comma-separated emails that may sign in (case-insensitive).' },
  { key: 'oidcAllowedDomains', flag: 'oidc-allowed-domains', env: 'FLEETPLANE_OIDC_ALLOWED_DOMAINS', kind: 'string', help: 'Comma-separated email domains that may sign in (subdomains do not match).' },
  { key: 'oidcAllowedSubjects', flag: 'oidc-allowed-subjects', env: 'FLEETPLANE_OIDC_ALLOWED_SUBJECTS', kind: 'string', help: 'Comma-separated subjects (sub) that may sign in. With all three lists empty, everyone the issuer authenticates may.' },
  { key: 'oidcRequireVerifiedEmail', flag: 'oidc-require-verified-email', env: 'FLEETPLANE_OIDC_REQUIRE_VERIFIED_EMAIL', kind: 'bool', help: 'Email and domain rules accept only emails the issuer says are verified.' },
  { key: 'oidcAdmins', flag: 'oidc-admins', env: 'FLEETPLANE_OIDC_ADMINS', kind: 'string', help: 'Comma-separated emails (verified) or subjects that become server admins at their first login.' },
  { key: 'oidcClockSkew', flag: 'oidc-clock-skew', env: 'FLEETPLANE_OIDC_CLOCK_SKEW', kind: 'seconds', min: 0, max: 300, help: 'Clock skew accepted on ID tokens (exp, nbf, iat).' },
  { key: 'sessionTtl', flag: 'session-ttl', env: 'FLEETPLANE_SESSION_TTL', kind: 'seconds', min: 1, help: 'Idle lifetime of a user session; each refresh extends it (never past --session-max-age).' },
  { key: 'sessionMaxAge', flag: 'session-max-age', env: 'FLEETPLANE_SESSION_MAX_AGE', kind: 'seconds', min: 1, help: 'Absolute lifetime of a user session: past it, sign in again.' },
  { key: 'publicUrl', flag: 'public-url', env: 'FLEETPLANE_PUBLIC_URL', kind: 'string', help: 'URL browsers reach this server at (login callback, CSRF check); default: from each request. Set it behind a TLS-terminating proxy.' },
  { key: 'maxConnectionsPerSource', flag: 'max-connections-per-source', env: 'FLEETPLANE_MAX_CONNECTIONS_PER_SOURCE', kind: 'int', min: 0, help: 'Open connections one source address may hold (default: 3/4 of the total limit in force, as agents behind one NAT share an address; 0: no limit); past it an idle connection of that address makes room, else the new one is answered 503 and closed.' },
  { key: 'headersTimeout', flag: 'headers-timeout', env: 'FLEETPLANE_HEADERS_TIMEOUT', kind: 'seconds', min: 0.05, max: 3_600, help: 'How long request headers (and, with TLS, the handshake) may take to arrive; past it the request gets 408 and its connection is closed.' },
  { key: 'stun', flag: 'stun', env: 'FLEETPLANE_STUN', kind: 'bool', help: 'Answer STUN Binding requests on UDP, so agents learn their public address and NAT type (--stun=false: off).' },
  { key: 'stunPort', flag: 'stun-port', env: 'FLEETPLANE_STUN_PORT', kind: 'int', min: 0, max: 65535, help: 'UDP port of the STUN responder, on --host (0: any free port).' },
  { key: 'stunAltPort', flag: 'stun-alt-port', env: 'FLEETPLANE_STUN_ALT_PORT', kind: 'int', min: 0, max: 65535, help: 'Second UDP port of the STUN responder: agents asking both tell a symmetric NAT from another (0: any free port).' },
  { key: 'relay', flag: 'relay', env: 'FLEETPLANE_RELAY', kind: 'bool', help: 'Relay WireGuard packets between devices that reach each other no other way (GET /api/relay), and be listed in GET /api/relays (--relay=false: off).' },
  { key: 'relayUrl', flag: 'relay-url', env: 'FLEETPLANE_RELAY_URL', kind: 'string', help: "Base URL this replica's relay is listed with, for a replica agents reach at its own address (default: none, agents use the server they reached)." },
];

/** A setting that can't be used; the message names the setting. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
}

function convert(spec: SettingSpec, raw: string, source: string): string | number | boolean {
  const where = `${source} ${source === 'flag' ? `--${spec.flag}` : spec.env ?? ''}`.trim();
  if (spec.kind === 'bool') {
    if (['1', 'true', 'yes', ''].includes(raw)) return true;
    if (['0', 'false', 'no'].includes(raw)) return false;
    throw new SettingsError(`invalid ${where}: "${raw}" is not a boolean`);
  }
  if (spec.kind === 'string') {
    if (spec.choices && !spec.choices.includes(raw)) {
      throw new SettingsError(`invalid ${where}: "${raw}" is not one of ${spec.choices.join(', ')}`);
    }
    return raw;
  }
  let n: number;
  if (spec.kind === 'bytes') {
    const m = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i.exec(raw.trim());
    if (!m) throw new SettingsError(`invalid ${where}: "${raw}" is not a size (e.g. 4MiB)`);
    const unit = (m[2] ?? 'b').toLowerCase()[0];
    const mult = unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1;
    n = Math.floor(Number(m[1]) * mult);
  } else if (spec.kind === 'seconds') {
    const seconds = parseDuration(raw);
    if (seconds === undefined) throw new SettingsError(`invalid ${where}: "${raw}" is not a duration (e.g. ${DURATION_EXAMPLES})`);
    n = seconds;
  } else {
    if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw new SettingsError(`invalid ${where}: "${raw}" is not a number`);
    n = Number(raw);
    if (spec.kind === 'int' && !Number.isInteger(n)) throw new SettingsError(`invalid ${where}: "${raw}" is not an integer`);
  }
  if (spec.min !== undefined && n < spec.min) throw new SettingsError(`invalid ${where}: ${raw} is below ${spec.min}`);
  if (spec.max !== undefined && n > spec.max) throw new SettingsError(`invalid ${where}: ${raw} is above ${spec.max}`);
  return n;
}

const BY_FLAG = new Map(SETTING_SPECS.map((s) => [s.flag, s]));
const SETTINGS_GRAMMAR: CommandLineGrammar = { flags: Object.fromEntries(SETTING_SPECS.map((s) => [s.flag, { takesValue: s.kind !== 'bool' }])) };

/**
 * Builds settings from command-line arguments (after the subcommand) and the
 * environment. Throws SettingsError naming the first unknown or malformed one.
 */
export function parseSettings(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Settings {
  const out: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  const given = new Set<keyof Settings>();
  for (const spec of SETTING_SPECS) {
    const raw = spec.env ? env[spec.env] : undefined;
    if (raw !== undefined && raw !== '') {
      out[spec.key] = convert(spec, raw, 'environment variable');
      given.add(spec.key);
    }
  }
  for (const word of parseCommandLine(argv, SETTINGS_GRAMMAR)) {
    if (word.kind === 'positional') throw new SettingsError(`unexpected argument "${word.value}"`);
    if (word.kind === 'end') throw new SettingsError('unknown setting --');
    if (word.kind === 'unknown') {
      throw new SettingsError(word.raw.startsWith('--') ? `unknown setting ${word.raw}${didYouMeanFlag(word.raw, BY_FLAG.keys())}` : `unexpected argument "${word.word}"`);
    }
    const spec = BY_FLAG.get(word.name);
    if (!spec) throw new SettingsError(`unknown setting ${word.raw}`);
    let value = word.value;
    if (value === undefined && spec.kind === 'bool') value = 'true';
    if (value === undefined) throw new SettingsError(`setting ${word.raw} needs a value`);
    out[spec.key] = convert(spec, value, 'flag');
    given.add(spec.key);
  }
  const settings = out as unknown as Settings;
  if (!given.has('compactionInterval')) {
    settings.compactionInterval = Math.min(60, settings.tombstoneRetention / 2);
  }
  if (!given.has('bus')) settings.bus = defaultBus(settings);
  validateSettings(settings);
  return settings;
}

/**
 * One process alone signals in memory; processes sharing a database (the
 * workers of one embedded PostgreSQL, replicas of one --database-url) use it.
 */
function defaultBus(s: Settings): Settings['bus'] {
  return s.databaseUrl || (s.workers > 1 && !s.memory) ? 'postgres' : 'memory';
}

/** Cross-setting checks, shared by the parser and programmatic callers. */
export function validateSettings(s: Settings): void {
  if ((s.tlsCert === undefined) !== (s.tlsKey === undefined)) {
    throw new SettingsError(`invalid --${s.tlsCert === undefined ? 'tls-key' : 'tls-cert'}: HTTPS needs both --tls-cert and --tls-key`);
  }
  if (s.bus === 'postgres' && !s.databaseUrl && s.memory) throw new SettingsError('invalid --bus: postgres needs PostgreSQL (the embedded default or --database-url), not --memory');
  if (s.bus === 'redis' && !s.redisUrl) throw new SettingsError('invalid --bus: redis needs --redis-url');
  if (s.workers > 1 && !s.databaseUrl && s.memory) {
    throw new SettingsError('invalid --workers: more than one worker needs PostgreSQL, the embedded default or --database-url (--memory is one process only)');
  }
  if (s.workers > 1 && s.bus === 'memory') throw new SettingsError('invalid --workers: more than one worker needs --bus postgres or redis');
  validateOidcSettings(s);
  if (s.stun && s.stunPort !== 0 && s.stunPort === s.stunAltPort) throw new SettingsError('invalid --stun-alt-port: it must differ from --stun-port');
  if (s.relayUrl !== undefined && !/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/.test(s.relayUrl)) {
    throw new SettingsError(`invalid --relay-url: "${s.relayUrl}" is not an http or https base URL`);
  }
  if (s.registrationKeyMaxTtl > 0 && (s.registrationKeyTtl === 0 || s.registrationKeyTtl > s.registrationKeyMaxTtl)) {
    throw new SettingsError('invalid --registration-key-ttl: it must be between 1 second and --registration-key-max-ttl (0 only with --registration-key-max-ttl 0)');
  }
  if (s.privatePort !== undefined && !s.privateSecret) {
    throw new SettingsError('invalid --private-port: the private listener needs --private-secret (or FLEETPLANE_PRIVATE_SECRET)');
  }
}

/** User login needs the issuer, the client id and one source of the client secret. */
function validateOidcSettings(s: Settings): void {
  if (s.publicUrl !== undefined && !/^https?:\/\/[^/?#]+$/.test(s.publicUrl.replace(/\/$/, ''))) {
    throw new SettingsError(`invalid --public-url: "${s.publicUrl}" is not an origin (scheme://host[:port])`);
  }
  if (s.oidcIssuer === undefined) return;
  if (!s.oidcClientId) throw new SettingsError('invalid --oidc-issuer: user login needs --oidc-client-id');
  if ((s.oidcClientSecret === undefined) === (s.oidcClientSecretFile === undefined)) {
    throw new SettingsError('invalid --oidc-issuer: user login needs one of --oidc-client-secret-file and --oidc-client-secret (or FLEETPLANE_OIDC_CLIENT_SECRET)');
  }
  if (s.sessionTtl > s.sessionMaxAge) throw new SettingsError('invalid --session-ttl: it is longer than --session-max-age');
}

/** Settings for programmatic use (tests, embedding): defaults plus overrides, checked. */
export function makeSettings(overrides: Partial<Settings> = {}): Settings {
  const s: Settings = { ...DEFAULT_SETTINGS, ...overrides };
  if (overrides.compactionInterval === undefined) s.compactionInterval = Math.min(60, s.tombstoneRetention / 2);
  if (overrides.bus === undefined) s.bus = defaultBus(s);
  // The one setting an embedding program gets from the environment too: a test suite names its template once for every server it starts.
  if (overrides.memoryTemplate === undefined && process.env.FLEETPLANE_MEMORY_TEMPLATE) s.memoryTemplate = process.env.FLEETPLANE_MEMORY_TEMPLATE;
  // So do the STUN ports: a suite running servers in parallel sets them to 0 once (test/support/global-setup.ts).
  for (const spec of SETTING_SPECS) {
    const raw = spec.env && (spec.key === 'stunPort' || spec.key === 'stunAltPort') && overrides[spec.key] === undefined ? process.env[spec.env] : undefined;
    if (raw) (s as unknown as Record<string, unknown>)[spec.key] = convert(spec, raw, 'environment variable');
  }
  validateSettings(s);
  return s;
}
