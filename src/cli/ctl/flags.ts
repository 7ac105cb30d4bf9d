/**
 * Every flag `fleetplane ctl` knows, with its kind and default help. A
 * command accepts only the flags it lists (see command-spec.ts), plus the
 * connection flags when it talks to a server; any other is a usage error.
 */
export type FlagKind = 'string' | 'boolean' | 'list';

export interface FlagSpec {
  kind: FlagKind;
  /** One letter: `-o json`, `-w`. */
  short?: string;
  /** Placeholder of the value in help (string and list flags). */
  value?: string;
  help: string;
}

export const FLAGS = {
  help: { kind: 'boolean', short: 'h', help: 'show this help' },
  version: { kind: 'boolean', help: 'print the version' },
  server: { kind: 'string', value: 'URL', help: "server base URL (env FLEETPLANE_URL; default: the context's)" },
  token: { kind: 'string', value: 'TOKEN', help: "bearer token (env FLEETPLANE_TOKEN; default: the context's)" },
  context: { kind: 'string', value: 'NAME', help: 'use this context of the config file instead of the current one' },
  config: {
    kind: 'string',
    value: 'FILE',
    help: 'config file (env FLEETPLANE_CONFIG; default $XDG_CONFIG_HOME/fleetplane/config.json, else ~/.config/fleetplane/config.json)',
  },
  'ca-file': { kind: 'string', value: 'FILE', help: "PEM certificates to trust for https (env FLEETPLANE_CA_FILE; default: the context's, else the system's)" },
  org: { kind: 'string', value: 'ORG', help: "organization name or id (default: the context's)" },
  output: { kind: 'string', short: 'o', value: 'FORMAT', help: 'table, wide, json or yaml (default table)' },
  watch: { kind: 'boolean', short: 'w', help: 'after the list, print a line per change until Ctrl-C' },
  data: { kind: 'string', value: 'JSON|@FILE', help: 'request body as JSON, or @file to read it; field flags override its fields' },
  name: { kind: 'string', value: 'NAME', help: 'organization name (unique)' },
  description: { kind: 'string', value: 'TEXT', help: 'description' },
  hostname: { kind: 'string', value: 'NAME', help: 'device hostname' },
  'public-key': { kind: 'string', value: 'KEY', help: 'WireGuard public key (base64)' },
  'security-group': { kind: 'string', value: 'GROUP', help: 'security group, by name, description or id ("" for none)' },
  tags: { kind: 'string', value: 'TAGS', help: 'tags, comma separated (tag:web,tag:db), replacing the list ("" for none); rules select devices by tag' },
  'approved-routes': {
    kind: 'string',
    value: 'CIDRS',
    help: 'routes of the device that agents apply, comma separated, replacing the approved list ("" for none); each must also be requested by the device',
  },
  all: { kind: 'boolean', help: 'every route the device requests now' },
  relay: { kind: 'string', value: 'true|false', help: 'the device relays for peers a symmetric NAT keeps apart (admins; it needs a public address)' },
  'if-match': { kind: 'string', value: 'REVISION', help: 'only if the object is still at this revision (else exit 1, precondition_failed)' },
  role: { kind: 'string', value: 'ROLE', help: 'admin or read' },
  email: { kind: 'string', value: 'EMAIL', help: "invite by email (matched case-insensitively, only when the identity provider verified it)" },
  'owner-email': { kind: 'string', value: 'EMAIL', help: 'invite this email as the owner (default with the admin token: an owner invitation claimed by its printed token)' },
  'owner-user-id': { kind: 'string', value: 'USER', help: 'make this existing user (its id) the owner at once' },
  subject: { kind: 'string', value: 'SUBJECT', help: "invite by the identity provider's subject (sub claim)" },
  'expires-in': { kind: 'string', value: 'DURATION', help: 'lifetime from now, instead of --expires-at: 7d, 12h, 30m or seconds' },
  organizations: { kind: 'list', value: 'ORGS', help: "organizations (names or ids, comma separated or repeated) an API key may act in (default: the context's)" },
  user: { kind: 'string', value: 'USER', help: "whose API keys: a user id (admins), default me" },
  'single-use': { kind: 'boolean', help: 'the key enrolls one device only (default: any number)' },
  'expires-at': { kind: 'string', value: 'TIME', help: 'RFC 3339 expiry, e.g. 2030-01-01T00:00:00Z (default: never)' },
  'expiring-within': {
    kind: 'string',
    value: 'DURATION',
    help: 'only devices whose token expires within this (7d, 12h, 30m or seconds), expired ones included; needs an admin token',
  },
  ephemeral: { kind: 'boolean', help: "devices the key enrolls are deleted once offline longer than the server's --ephemeral-offline-timeout" },
  since: { kind: 'string', value: 'TIME|DURATION', help: 'only entries at or after this RFC 3339 time, or this long ago (10m, 1h, 7d)' },
  until: { kind: 'string', value: 'TIME|DURATION', help: 'only entries before this RFC 3339 time, or this long ago (10m, 1h, 7d)' },
  actor: { kind: 'string', value: 'TYPE[:ID]', help: 'only entries of this actor: admin, token, device, registration_key, user, api_key, system or anonymous, with an id' },
  object: { kind: 'string', value: 'ID|NAME', help: 'only entries about this object: an id, or a device hostname, security group or organization name' },
  action: { kind: 'string', value: 'ACTION', help: 'only entries of this action: create, update, delete, approve, revoke, renew or denied' },
  kind: { kind: 'string', value: 'KIND', help: 'only entries about this kind of object, e.g. device, security-group, registration-key (plurals, underscores, sg work too)' },
  limit: { kind: 'string', value: 'N', help: 'show at most N entries (default 100)' },
  params: { kind: 'string', value: 'JSON', help: 'parameters of the agent method (default {})' },
  wait: { kind: 'string', value: 'DURATION', help: 'how long the server waits for the device to connect: 30s, 2m or seconds (server default 20 s, max 120 s)' },
  allow: { kind: 'list', value: 'PROTO[:PORTS]', help: 'inbound rule: tcp, udp, icmp, icmpv6 or any; PORTS is N or N-M (default: all)' },
  from: { kind: 'list', value: 'RANGES', help: 'sources of the preceding --allow: CIDR, IP or IP-IP, comma separated (default: anywhere)' },
  'egress-allow': { kind: 'list', value: 'PROTO[:PORTS]', help: 'outbound rule, as --allow' },
  to: { kind: 'list', value: 'RANGES', help: 'destinations of the preceding --egress-allow (default: anywhere)' },
  file: { kind: 'string', short: 'f', value: 'FILE', help: 'the policy document (YAML); - reads stdin' },
  'dry-run': { kind: 'boolean', help: 'check the document and print what would change, changing nothing' },
} as const satisfies Record<string, FlagSpec>;

export type FlagName = keyof typeof FLAGS;

type OfKind<K extends FlagKind> = { [N in FlagName]: (typeof FLAGS)[N]['kind'] extends K ? N : never }[FlagName];
export type StringFlag = OfKind<'string'>;
export type BooleanFlag = OfKind<'boolean'>;
export type ListFlag = OfKind<'list'>;

/** Flags of every command that talks to a server. */
export const CONNECTION_FLAGS: readonly FlagName[] = ['server', 'token', 'context', 'config', 'ca-file'];

export function isFlagName(name: string): name is FlagName {
  return Object.hasOwn(FLAGS, name);
}
