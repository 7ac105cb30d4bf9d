/** A mistake in the command line: exit code 2, one line on stderr. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const EXIT = { ok: 0, api: 1, usage: 2 } as const;

export const USAGE = `Usage: fleetplane ctl <resource> <verb> [args] [flags]

Resources and verbs:
  orgs              list | get <id> | create | update <id> | delete <id>
  devices           list | get <id> | create | update <id> | delete <id> | rpc <id> <method>
  security-groups   list | get <id> | create | update <id> | delete <id>
  tokens            create | list | delete <id>
  registration-keys create | list | delete <id>
  watch <kinds...>  stream events of device, security-group, organization (or: all)

Connection (flags win over the environment):
  --server URL      server base URL        (FLEETPLANE_URL)
  --token TOKEN     bearer token           (FLEETPLANE_TOKEN)
  --org ID          organization, for everything but 'orgs'

Output:
  -o, --output table|json   tables for people (default), JSON for scripts (NDJSON for watch)

Writes:
  --data JSON|@file         request body; the flags below override its fields
  --name, --description     organizations; --description also for groups, tokens, keys
  --hostname, --public-key  devices
  --if-match REVISION       update/delete only if the object is still at this revision
  --role admin|read         tokens create
  --single-use, --expires-at TIME   registration-keys create

Other:
  --params JSON, --wait SECONDS     devices rpc
  --gt-revision N                  watch: only changes after N
  -h, --help

Exit codes: 0 success, 1 the server or the network failed, 2 bad usage.`;
