import type { Database } from './database.js';

/**
 * Schema migrations, applied in order at start on PGlite and PostgreSQL alike.
 * Append only: a released migration never changes.
 */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
CREATE TABLE orgs (
  id uuid PRIMARY KEY,
  head_revision bigint NOT NULL DEFAULT 0,
  compacted_revision bigint NOT NULL DEFAULT 0,
  deleted_at timestamptz
);

-- Every watchable object of every kind, live or tombstone, at its latest revision.
CREATE TABLE objects (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  kind text NOT NULL,
  revision bigint NOT NULL,
  deleted boolean NOT NULL DEFAULT false,
  value jsonb NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX objects_org_revision ON objects (org_id, revision);
CREATE INDEX objects_org_kind_revision ON objects (org_id, kind, revision);
CREATE INDEX objects_tombstones ON objects (changed_at) WHERE deleted;
CREATE UNIQUE INDEX objects_org_name ON objects ((value->>'name')) WHERE kind = 'organization' AND NOT deleted;
CREATE UNIQUE INDEX objects_device_public_key ON objects (org_id, (value->>'public_key')) WHERE kind = 'device' AND NOT deleted;
CREATE INDEX objects_device_group ON objects (org_id, (value->>'security_group_id')) WHERE kind = 'device' AND NOT deleted;

CREATE TABLE device_ips (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  ip bigint NOT NULL,
  device_id uuid NOT NULL UNIQUE,
  PRIMARY KEY (org_id, ip)
);

-- Observed state: written by agents, never revisioned (docs/protocol.md "Device").
CREATE TABLE device_status (
  device_id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  status jsonb NOT NULL,
  last_seen timestamptz
);
CREATE INDEX device_status_org ON device_status (org_id);

CREATE TABLE tokens (
  id uuid PRIMARY KEY,
  secret_hash text NOT NULL UNIQUE,
  kind text NOT NULL CHECK (kind IN ('org', 'device')),
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  device_id uuid,
  role text NOT NULL CHECK (role IN ('admin', 'read', 'device')),
  description text NOT NULL DEFAULT '',
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX tokens_org ON tokens (org_id) WHERE revoked_at IS NULL;
CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL;
CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE registration_keys (
  id uuid PRIMARY KEY,
  secret_hash text NOT NULL UNIQUE,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  description text NOT NULL DEFAULT '',
  single_use boolean NOT NULL DEFAULT false,
  expires_at timestamptz,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX registration_keys_org ON registration_keys (org_id);

CREATE TABLE settings (
  key text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE replicas (
  id text PRIMARY KEY,
  private_url text,
  started_at timestamptz NOT NULL DEFAULT now(),
  lease_expires_at timestamptz NOT NULL
);
`,
  },
  {
    version: 2,
    name: 'tunnel-ip-free-list',
    sql: `
-- Tunnel IP allocation without scanning the organization's addresses (store/tunnel-ips.ts).
-- Filled per organization on its next allocation, from device_ips.
CREATE TABLE ip_pools (
  org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  cidr text NOT NULL,
  next_ip bigint NOT NULL
);

CREATE TABLE ip_free (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  ip bigint NOT NULL,
  PRIMARY KEY (org_id, ip)
);
`,
  },
  {
    version: 3,
    name: 'device-presence',
    sql: `
-- A device is online while it holds a tunnel or a watch stream on a replica whose lease is live.
-- Rows change only when a device's first connection opens or its last one closes on a replica;
-- a replica's rows go with its row (clean shutdown or garbage collection after its lease expired).
CREATE TABLE device_presence (
  device_id uuid NOT NULL,
  replica_id text NOT NULL REFERENCES replicas(id) ON DELETE CASCADE,
  PRIMARY KEY (device_id, replica_id)
);
CREATE INDEX device_presence_replica ON device_presence (replica_id);

-- What the last PUT said of online (a status frame says nothing: its tunnel is the liveness).
ALTER TABLE device_status ADD COLUMN reported_online boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 4,
    name: 'organization-names-not-unique',
    sql: `
-- A unique name let any organization token test whether another tenant has a name
-- (a rename to it was refused). Names are labels: a lookup by name sees only what its caller may.
DROP INDEX objects_org_name;
`,
  },
  {
    version: 5,
    name: 'route-approval',
    sql: `
-- Agents apply only approved routes (issue 12). Routes advertised before are not approved
-- by this migration: a device that enrolled itself could have claimed any of them.
UPDATE objects SET value = jsonb_set(value, '{approved_cidrs}', '[]'::jsonb)
 WHERE kind = 'device' AND NOT deleted AND value->'approved_cidrs' IS NULL;
UPDATE objects SET value = jsonb_set(value, '{network,auto_approve_cidrs}', '[]'::jsonb)
 WHERE kind = 'organization' AND NOT deleted AND value->'network' IS NOT NULL AND value->'network'->'auto_approve_cidrs' IS NULL;
`,
  },
  {
    version: 6,
    name: 'users-members-keys',
    sql: `
-- People (issue 13), identified by (issuer, subject): email is an attribute, never the identity.
CREATE TABLE users (
  id uuid PRIMARY KEY,
  issuer text NOT NULL,
  subject text NOT NULL,
  email text,
  name text,
  server_admin boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_login_at timestamptz,
  UNIQUE (issuer, subject)
);
CREATE INDEX users_email ON users (lower(email)) WHERE email IS NOT NULL;

-- Sessions and personal API keys are tokens of a user: one credential table, one token index,
-- one revocation follower for every credential that opens streams and tunnels.
ALTER TABLE tokens DROP CONSTRAINT tokens_kind_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_kind_check CHECK (kind IN ('org', 'device', 'session', 'api_key'));
ALTER TABLE tokens DROP CONSTRAINT tokens_role_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check CHECK (role IN ('owner', 'admin', 'read', 'device', 'user'));
ALTER TABLE tokens ALTER COLUMN org_id DROP NOT NULL;
ALTER TABLE tokens ADD COLUMN user_id uuid REFERENCES users(id) ON DELETE CASCADE;
-- An API key's organizations (NULL for every other kind).
ALTER TABLE tokens ADD COLUMN org_ids uuid[];
-- A session's absolute end: a refresh moves expires_at, never past it.
ALTER TABLE tokens ADD COLUMN max_expires_at timestamptz;
ALTER TABLE tokens ADD COLUMN last_used_at timestamptz;
ALTER TABLE tokens ADD COLUMN source text;
ALTER TABLE tokens ADD COLUMN user_agent text;
ALTER TABLE tokens ADD CONSTRAINT tokens_holder CHECK (
  (kind IN ('org', 'device')) = (org_id IS NOT NULL) AND (kind IN ('session', 'api_key')) = (user_id IS NOT NULL)
);
CREATE INDEX tokens_user ON tokens (user_id) WHERE user_id IS NOT NULL;

CREATE TABLE memberships (
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'read')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

-- Accepted at the invitee's next login when its email (case-insensitive) or subject matches.
CREATE TABLE invitations (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  email text,
  subject text,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'read')),
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  accepted_by uuid REFERENCES users(id) ON DELETE SET NULL,
  revoked_at timestamptz,
  CHECK ((email IS NULL) <> (subject IS NULL))
);
CREATE INDEX invitations_org ON invitations (org_id);
CREATE INDEX invitations_open_email ON invitations (lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL AND email IS NOT NULL;
CREATE INDEX invitations_open_subject ON invitations (subject) WHERE accepted_at IS NULL AND revoked_at IS NULL AND subject IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'pending-logins',
    sql: `
-- Logins between their start and their end (issue 13), kept in the database so that any replica
-- finishes them: a browser login (state, nonce, PKCE verifier) under the hash of its cookie, a
-- device login (the issuer's device code) under the hash of its handle. Both expire.
CREATE TABLE pending_logins (
  id_hash text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('browser', 'device')),
  source text NOT NULL,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  -- A device login: no token request to the issuer before this, from any replica.
  next_poll_at timestamptz
);
CREATE INDEX pending_logins_expires ON pending_logins (expires_at);
CREATE INDEX pending_logins_source ON pending_logins (source);
`,
  },
  {
    version: 8,
    name: 'audit-log',
    sql: `
-- Who changed what (issue 13), written in the transaction of the change. No foreign key to orgs:
-- an organization's log outlives its compaction until retention removes it.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  org_id uuid,
  at timestamptz NOT NULL DEFAULT now(),
  actor_type text NOT NULL CHECK (actor_type IN ('admin', 'token', 'device', 'registration_key', 'user', 'api_key', 'replica', 'system', 'anonymous')),
  actor_id text,
  credential_id text,
  action text NOT NULL CHECK (action IN ('create', 'update', 'delete', 'approve', 'revoke', 'renew', 'denied')),
  kind text NOT NULL,
  object_id text,
  revision bigint,
  source text,
  user_agent text CHECK (length(user_agent) <= 256),
  details jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (length(details::text) <= 4096)
);
CREATE INDEX audit_log_org_id ON audit_log (org_id, id);
CREATE INDEX audit_log_org_at ON audit_log (org_id, at);
CREATE INDEX audit_log_org_revision ON audit_log (org_id, revision) WHERE revision IS NOT NULL;
CREATE INDEX audit_log_actor ON audit_log (actor_type, actor_id, id);
CREATE INDEX audit_log_object ON audit_log (object_id, id);
CREATE INDEX audit_log_org_action ON audit_log (org_id, action, id);
-- Retention deletes the oldest first.
CREATE INDEX audit_log_at ON audit_log (at);
-- Whether an organization's read members and read tokens may see its audit log (off: admins only).
UPDATE objects SET value = jsonb_set(value, '{audit_readable_by_read}', 'false'::jsonb)
 WHERE kind = 'organization' AND value->'audit_readable_by_read' IS NULL;
`,
  },
  {
    version: 9,
    name: 'device-keys-over-time',
    sql: `
-- Ephemeral registration keys (issue 13): the devices they enroll are deleted once offline too long.
ALTER TABLE registration_keys ADD COLUMN ephemeral boolean NOT NULL DEFAULT false;
-- Every device carries ephemeral: those stored before (tombstones included, their last state is sent) are not.
UPDATE objects SET value = jsonb_set(value, '{ephemeral}', 'false'::jsonb)
 WHERE kind = 'device' AND value->'ephemeral' IS NULL;
-- The ephemeral collector reads its candidates without scanning every device.
CREATE INDEX objects_ephemeral_devices ON objects (id) WHERE kind = 'device' AND NOT deleted AND (value->>'ephemeral') = 'true';
-- Tokens that just expired are looked up by the revocation follower, as revoked ones are (tokens_revoked).
CREATE INDEX tokens_expires ON tokens (expires_at) WHERE expires_at IS NOT NULL;
`,
  },
  {
    version: 10,
    name: 'device-status-hot-updates',
    sql: `
-- Every ACK rewrites its device's status row. Half-full pages leave room for the new version beside
-- the old, so the update is HOT: no new index entries. A 10,000-row status batch on PostgreSQL 15
-- took 143 ms instead of 208 ms, every update HOT instead of almost none.
-- Pages written from now on are filled to half, older pages keep their rows until rewritten.
ALTER TABLE device_status SET (fillfactor = 50);
`,
  },
  {
    version: 11,
    name: 'tokens-created-followed',
    sql: `
-- The token follower of every replica reads the tokens created since its last round, to know them
-- without a lookup per connection (a fleet enrolled through one replica joins all of them).
CREATE INDEX tokens_created ON tokens (created_at);
`,
  },
  {
    version: 12,
    name: 'convergence-deltas',
    sql: `
-- A followed convergence view reads only what changed since its last read: the statuses written by
-- transactions its last snapshot did not see, and the presence of replicas whose presence changed.
-- No index on xid: it changes on every ACK, and an index on it would end the HOT updates of version 10
-- (the view scans its organization's statuses, comparing xid, without decoding them).
ALTER TABLE device_status ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE replicas ADD COLUMN presence_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
`,
  },
  {
    version: 13,
    name: 'replica-relay',
    sql: `
-- Whether each replica relays packets between devices, and the URL it advertises for it
-- (docs/protocol.md "Relays"): the relay list is the live replicas whose relay is on.
ALTER TABLE replicas ADD COLUMN relay boolean NOT NULL DEFAULT true;
ALTER TABLE replicas ADD COLUMN relay_url text;
`,
  },
  {
    version: 14,
    name: 'device-status-peers',
    sql: `
-- The path to each peer a device reports (docs/protocol.md "Path reports"), up to 1,024 entries: a
-- column of its own, not a field of status, so that what reads every device's applied revision
-- (convergence, its view, the device totals) never decompresses them. NULL: no peers reported.
ALTER TABLE device_status ADD COLUMN peers jsonb;
ALTER TABLE device_status ADD COLUMN peers_truncated boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 15,
    name: 'credential-makers',
    sql: `
-- What made each organization token and registration key (issue 36): the credential, the user whose
-- authority it rests on, and every token above it (maker_chain, the nearest last). Revoking a credential
-- revokes what it made, transitively, in one statement (maker_chain && ARRAY[id]), and a token or key one of
-- whose makers expired is refused. Null kind: not known (made before this version and not in the audit log).
ALTER TABLE tokens ADD COLUMN created_by_kind text CHECK (created_by_kind IN ('admin', 'token', 'session', 'api_key', 'user'));
ALTER TABLE tokens ADD COLUMN created_by_credential uuid;
ALTER TABLE tokens ADD COLUMN created_by_user uuid;
ALTER TABLE tokens ADD COLUMN maker_chain uuid[] NOT NULL DEFAULT '{}';
-- Only the tokens something made: device tokens and sessions, most of the table, have none.
CREATE INDEX tokens_maker_chain ON tokens USING gin (maker_chain) WHERE maker_chain <> '{}';
CREATE INDEX tokens_created_by_user ON tokens (org_id, created_by_user) WHERE created_by_user IS NOT NULL AND revoked_at IS NULL;
ALTER TABLE registration_keys ADD COLUMN created_by_kind text CHECK (created_by_kind IN ('admin', 'token', 'session', 'api_key', 'user'));
ALTER TABLE registration_keys ADD COLUMN created_by_credential uuid;
ALTER TABLE registration_keys ADD COLUMN created_by_user uuid;
ALTER TABLE registration_keys ADD COLUMN maker_chain uuid[] NOT NULL DEFAULT '{}';
CREATE INDEX registration_keys_maker_chain ON registration_keys USING gin (maker_chain) WHERE maker_chain <> '{}';
CREATE INDEX registration_keys_created_by_user ON registration_keys (org_id, created_by_user) WHERE created_by_user IS NOT NULL;

-- An invitation claimed by its secret (the first owner of an organization the admin token creates) names
-- neither an email nor a subject.
ALTER TABLE invitations ADD COLUMN secret_hash text UNIQUE;
ALTER TABLE invitations DROP CONSTRAINT invitations_check;
ALTER TABLE invitations ADD CONSTRAINT invitations_invitee CHECK (num_nonnulls(email, subject, secret_hash) = 1);

-- Tokens and keys made before: their maker as their creation's audit entry names it, while retention kept it.
UPDATE tokens t
   SET created_by_kind = CASE a.actor_type WHEN 'user' THEN 'session' ELSE a.actor_type END,
       created_by_credential = CASE WHEN a.actor_type = 'admin' THEN NULL ELSE a.credential_id::uuid END,
       created_by_user = CASE WHEN a.actor_type IN ('user', 'api_key') THEN a.actor_id::uuid END
  FROM audit_log a
 WHERE t.kind = 'org' AND a.kind = 'token' AND a.action = 'create' AND a.object_id = t.id::text
   AND a.actor_type IN ('admin', 'token', 'user', 'api_key');
UPDATE registration_keys k
   SET created_by_kind = CASE a.actor_type WHEN 'user' THEN 'session' ELSE a.actor_type END,
       created_by_credential = CASE WHEN a.actor_type = 'admin' THEN NULL ELSE a.credential_id::uuid END,
       created_by_user = CASE WHEN a.actor_type IN ('user', 'api_key') THEN a.actor_id::uuid END
  FROM audit_log a
 WHERE a.kind = 'registration_key' AND a.action = 'create' AND a.object_id = k.id::text
   AND a.actor_type IN ('admin', 'token', 'user', 'api_key');
-- Chains, from the tokens a session, an API key or the admin token made down: a token made by a token
-- gets its maker's chain and id, and its maker's user.
WITH RECURSIVE chain (id, ids, user_id) AS (
  SELECT id, CASE WHEN created_by_credential IS NULL THEN '{}'::uuid[] ELSE ARRAY[created_by_credential] END, created_by_user
    FROM tokens WHERE kind = 'org' AND created_by_kind IN ('admin', 'session', 'api_key')
  UNION ALL
  SELECT t.id, c.ids || c.id, c.user_id FROM tokens t JOIN chain c ON t.created_by_credential = c.id
   WHERE t.kind = 'org' AND t.created_by_kind = 'token'
)
UPDATE tokens t SET maker_chain = c.ids, created_by_user = c.user_id FROM chain c WHERE t.id = c.id;
-- A token made by a token whose own maker is not known rests on that token at least.
UPDATE tokens SET maker_chain = ARRAY[created_by_credential]
 WHERE kind = 'org' AND created_by_kind = 'token' AND created_by_credential IS NOT NULL AND maker_chain = '{}';
UPDATE registration_keys k
   SET maker_chain = CASE WHEN k.created_by_kind = 'token' THEN t.maker_chain || t.id ELSE ARRAY[k.created_by_credential] END,
       created_by_user = CASE WHEN k.created_by_kind = 'token' THEN t.created_by_user ELSE k.created_by_user END
  FROM tokens t
 WHERE k.created_by_credential IS NOT NULL AND t.id = k.created_by_credential;
-- What a credential revoked before made is revoked now, as it would have been, and audited as such.
WITH revoked AS (
  UPDATE tokens t SET revoked_at = now()
   WHERE t.kind = 'org' AND t.revoked_at IS NULL
     AND EXISTS (SELECT 1 FROM tokens m WHERE m.id = ANY(t.maker_chain) AND m.revoked_at IS NOT NULL)
  RETURNING t.id, t.org_id, t.created_by_kind, t.created_by_credential
)
INSERT INTO audit_log (org_id, actor_type, action, kind, object_id, details)
SELECT org_id, 'system', 'revoke', 'token', id::text,
       jsonb_build_object('cause', jsonb_build_object('kind', created_by_kind, 'id', created_by_credential), 'reason', 'maker_revoked_before_upgrade')
  FROM revoked;
WITH deleted AS (
  DELETE FROM registration_keys k
   WHERE EXISTS (SELECT 1 FROM tokens m WHERE m.id = ANY(k.maker_chain) AND m.revoked_at IS NOT NULL)
  RETURNING k.id, k.org_id, k.created_by_kind, k.created_by_credential
)
INSERT INTO audit_log (org_id, actor_type, action, kind, object_id, details)
SELECT org_id, 'system', 'delete', 'registration_key', id::text,
       jsonb_build_object('cause', jsonb_build_object('kind', created_by_kind, 'id', created_by_credential), 'reason', 'maker_revoked_before_upgrade')
  FROM deleted;
`,
  },
  {
    version: 16,
    name: 'object-previous-revision',
    sql: `
-- The revision an object's latest write replaced (issue 34, patch events). A tail cache reads each object at
-- its latest revision, so two writes between two fills show as one, and a patch from the copy it holds is right
-- only when that copy is the revision the write replaced. Null: created, or last written before this version.
ALTER TABLE objects ADD COLUMN prev_revision bigint;
`,
  },
  {
    version: 17,
    name: 'tags-and-group-names',
    sql: `
-- Devices carry tags, and the devices a registration key enrolls get the key's (issue 35, v1.12). Objects
-- stored before (tombstones included, their last state is sent) carry none, and groups no name.
ALTER TABLE registration_keys ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
UPDATE objects SET value = jsonb_set(value, '{tags}', '[]'::jsonb)
 WHERE kind = 'device' AND value->'tags' IS NULL;
UPDATE objects SET value = jsonb_set(value, '{name}', 'null'::jsonb)
 WHERE kind = 'security-group' AND value->'name' IS NULL;
UPDATE objects SET value = jsonb_set(value, '{tag_owners}', '{}'::jsonb)
 WHERE kind = 'organization' AND value->'tag_owners' IS NULL;
UPDATE objects SET value = jsonb_set(value, '{network,auto_approvers}', '[]'::jsonb)
 WHERE kind = 'organization' AND value->'network'->'auto_approvers' IS NULL;
-- group:<name> in a rule names exactly one live group.
CREATE UNIQUE INDEX objects_group_name ON objects (org_id, (value->>'name'))
 WHERE kind = 'security-group' AND NOT deleted AND value->>'name' IS NOT NULL;
`,
  },
  {
    version: 18,
    name: 'policy-documents',
    sql: `
-- An organization's policy document as its user sent it (issue 35, v1.13): the text, comments and key
-- order kept, and its ETag. What it compiles to lives in the organization object (its policy member),
-- so applying it is one revision. No row: the organization's access is its objects.
CREATE TABLE policy_documents (
  org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  text text NOT NULL,
  etag text NOT NULL,
  revision bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
UPDATE objects SET value = jsonb_set(value, '{applies_to}', '[]'::jsonb)
 WHERE kind = 'security-group' AND value->'applies_to' IS NULL;
`,
  },
  {
    version: 19,
    name: 'unique-organization-names',
    sql: `
-- Organization names are unique again (issue 37, v1.16, reversing migration 4): '--org acme' must name one
-- organization. Duplicates stored before keep their oldest (by created_at, then id) and the others are renamed
-- <name>-<n>, the smallest n >= 2 free among live names and the names given before it, one at a time in order of
-- name, created_at, id (a recursive query: PGlite and PostgreSQL both run it, no procedural code).
CREATE TEMP TABLE org_renames ON COMMIT DROP AS
WITH RECURSIVE live AS (
  SELECT id, value->>'name' AS name, value->>'created_at' AS created_at FROM objects WHERE kind = 'organization' AND NOT deleted
), dup AS (
  SELECT id, name, row_number() OVER (ORDER BY name, created_at, id) AS k
    FROM (SELECT id, name, created_at, row_number() OVER (PARTITION BY name ORDER BY created_at, id) AS r FROM live) ranked
   WHERE r > 1
), pick (k, id, old_name, new_name, taken) AS (
  SELECT 0::bigint, NULL::uuid, NULL::text, NULL::text, ARRAY(SELECT name FROM live)
  UNION ALL
  SELECT d.k, d.id, d.name, c.name, p.taken || c.name
    FROM pick p JOIN dup d ON d.k = p.k + 1
   CROSS JOIN LATERAL (
     SELECT d.name || '-' || n AS name FROM generate_series(2, cardinality(p.taken) + 2) n
      WHERE d.name || '-' || n <> ALL (p.taken) ORDER BY n LIMIT 1
   ) c
)
SELECT id, old_name, new_name FROM pick WHERE id IS NOT NULL;
-- Each rename is a revision of its organization, so its watchers see it.
UPDATE orgs g SET head_revision = g.head_revision + 1 FROM org_renames r WHERE g.id = r.id;
UPDATE objects o
   SET prev_revision = o.revision, revision = g.head_revision, changed_at = now(),
       value = o.value || jsonb_build_object('name', r.new_name, 'revision', g.head_revision,
                                             'updated_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM org_renames r JOIN orgs g ON g.id = r.id
 WHERE o.id = r.id;
INSERT INTO audit_log (org_id, actor_type, action, kind, object_id, revision, details)
SELECT r.id, 'system', 'update', 'organization', r.id::text, g.head_revision,
       jsonb_build_object('fields', jsonb_build_array('name'), 'previous_name', r.old_name, 'reason', 'duplicate_name_before_upgrade')
  FROM org_renames r JOIN orgs g ON g.id = r.id;
DROP TABLE org_renames;
CREATE UNIQUE INDEX objects_organization_name ON objects ((value->>'name')) WHERE kind = 'organization' AND NOT deleted;
`,
  },
  {
    version: 20,
    name: 'audit-object-name',
    sql: `
-- The object's name when its entry was written (issue 37, v1.18): the log names objects, deleted ones too.
-- Entries written before stay null: what they were called then is not known.
ALTER TABLE audit_log ADD COLUMN object_name text;
`,
  },
];

/** Arbitrary constant shared by every replica: the advisory lock serializing migrations. */
const MIGRATION_LOCK = 7_317_420_031;

/**
 * Applies pending migrations in one transaction under an advisory lock, so
 * replicas starting together apply each migration exactly once.
 * Returns the versions it applied. `migrations`: a prefix of MIGRATIONS
 * (a test bringing a database to an older version).
 */
export async function migrate(db: Database, migrations: readonly { version: number; name: string; sql: string }[] = MIGRATIONS): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => Number(r.version)));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      for (const statement of splitStatements(m.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}

/** Latest migration version this build knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

function splitStatements(sql: string): string[] {
  // Migrations contain no semicolons inside literals or bodies, so a plain split is exact.
  return sql
    .split(';')
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}
