import { deviceLoginPrompt, FleetplaneClient } from '../../client/index.js';
import { SECRET_PREFIX, type Session } from '../../protocol/wire.js';
import { UsageError } from '../exit-codes.js';
import type { Command, CommandGroup, LocalCommand } from './command-spec.js';
import { ctlFetch } from './connect.js';
import { ConfigError, loadConfig, saveConfig, type ConfigFile, type ContextEntry } from './config-file.js';
import type { LocalContext } from './context.js';
import { noExtraArgs, requireArg } from './flag-values.js';
import type { Column } from './output.js';

/** The context a login writes to, and the server it signs in at. */
interface LoginTarget {
  name: string;
  entry: ContextEntry;
}

/**
 * `--context`, else the current context, else (with --server or
 * FLEETPLANE_URL and no context yet) a new one named after the server's host.
 * A --server differing from the context's replaces it there.
 */
function loginTarget(ctx: LocalContext, config: ConfigFile): LoginTarget {
  const asked = ctx.flags.string('context') ?? config['current-context'];
  const server = ctx.flags.string('server') ?? (ctx.env['FLEETPLANE_URL'] || undefined);
  if (server !== undefined && !/^https?:\/\/[^/]/.test(server)) throw new UsageError(`the server must be an http(s) URL, not ${JSON.stringify(server)}`);
  const existing = asked === undefined ? undefined : config.contexts[asked];
  if (asked !== undefined && existing === undefined && ctx.flags.string('context') === undefined) {
    throw new ConfigError(`${ctx.configPath}: the current context "${asked}" is not defined`);
  }
  const chosenServer = server ?? existing?.server;
  if (chosenServer === undefined) throw new UsageError('no server: pass --server, set FLEETPLANE_URL, or log in to an existing context (--context)');
  const name = asked ?? new URL(chosenServer).host;
  const entry: ContextEntry = { ...existing, server: chosenServer };
  const caFile = ctx.flags.string('ca-file');
  if (caFile !== undefined && caFile !== '') entry['ca-file'] = caFile;
  if (existing && existing.server !== chosenServer) delete entry.token;
  return { name, entry };
}

async function clientFor(entry: ContextEntry, token?: string): Promise<FleetplaneClient> {
  return new FleetplaneClient({ baseUrl: entry.server, ...(token === undefined ? {} : { token }), fetch: await ctlFetch(entry['ca-file']) });
}

const login: LocalCommand = {
  kind: 'local',
  name: 'login',
  summary: 'sign in through the identity provider (device login) and keep the session in the context',
  details: [
    'Prints a URL and a code on stderr; open the URL in any browser, enter the code and sign in.',
    'The session token is stored in the context (--context, else the current one, else a new one',
    'named after the server), as --token would be, in the config file (mode 0600). Needs a server',
    'with --oidc-issuer.',
  ].join('\n'),
  flags: ['config', 'server', 'context', 'ca-file'],
  examples: ['fleetplane ctl login --server https://fleet.example.com', 'fleetplane ctl login --context prod'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const loaded = await loadConfig(ctx.configPath);
    const target = loginTarget(ctx, loaded.config);
    const client = await clientFor(target.entry);
    const created = await client.auth.deviceLogin({
      client: 'ctl',
      signal: ctx.signal,
      onCode: (l) => ctx.stderr.write(deviceLoginPrompt(l)),
      onPoll: (status, intervalMs) => ctx.stderr.write(status === 'pending' ? '.' : `\n(the server asks to poll every ${intervalMs / 1000} s)\n`),
    });
    ctx.stderr.write('\n');
    // Read again: another command may have changed the file while the user was signing in.
    const fresh = await loadConfig(ctx.configPath);
    const config = { ...fresh.config, contexts: { ...fresh.config.contexts, [target.name]: { ...fresh.config.contexts[target.name], ...target.entry, token: created.token } } };
    config['current-context'] ??= target.name;
    await saveConfig(ctx.configPath, config);
    const who = created.user.email ?? created.user.subject;
    ctx.out.done(`signed in as ${who} at ${target.entry.server} (context "${target.name}"; the session ends by ${created.session.max_expires_at})`, {
      context: target.name,
      user: created.user,
      session: created.session,
    });
  },
};

const logout: LocalCommand = {
  kind: 'local',
  name: 'logout',
  summary: "revoke the context's session and remove it from the config file",
  flags: ['config', 'context'],
  examples: ['fleetplane ctl logout', 'fleetplane ctl logout --context prod'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const loaded = await loadConfig(ctx.configPath);
    const name = ctx.flags.string('context') ?? loaded.config['current-context'];
    const entry = name === undefined ? undefined : loaded.config.contexts[name];
    if (name === undefined || entry === undefined) throw new UsageError('no context to log out of (--context NAME)');
    const token = entry.token;
    if (token === undefined || !token.startsWith(SECRET_PREFIX.session)) throw new UsageError(`context "${name}" holds no session (ctl login stores one)`);
    const client = await clientFor(entry, token);
    let revoked = true;
    try {
      await client.auth.logout({ signal: ctx.signal });
    } catch (err) {
      // An ended session (401) is logged out already; anything else keeps the token, so it can be retried.
      if (!(err instanceof Error && 'code' in err && err.code === 'unauthorized')) throw err;
      revoked = false;
    }
    const { token: _dropped, ...rest } = entry;
    await saveConfig(ctx.configPath, { ...loaded.config, contexts: { ...loaded.config.contexts, [name]: rest } });
    ctx.out.done(`logged out of ${entry.server} (context "${name}")${revoked ? '' : '; the session had already ended'}`, { context: name, revoked });
  },
};

const sessionColumns: ReadonlyArray<Column<Session & { current: boolean }>> = [
  { header: 'CURRENT', value: (s) => (s.current ? '*' : ' ') },
  { header: 'ID', value: (s) => s.id },
  { header: 'DESCRIPTION', value: (s) => s.description },
  { header: 'CREATED', value: (s) => s.created_at },
  { header: 'EXPIRES', value: (s) => s.expires_at },
  { header: 'SOURCE', value: (s) => s.source ?? '' },
];

const sessionCommands: readonly Command[] = [
  {
    kind: 'remote',
    name: 'list',
    summary: 'list your live sessions (* marks the one in use)',
    flags: ['output'],
    examples: ['fleetplane ctl sessions list'],
    async run(ctx, args) {
      noExtraArgs(args, 0);
      const [items, own] = await Promise.all([ctx.client.auth.listSessions('me', { signal: ctx.signal }), ctx.client.auth.session({ signal: ctx.signal })]);
      ctx.out.list(items.map((s) => ({ ...s, current: s.id === own.session.id })), sessionColumns);
    },
  },
  {
    kind: 'remote',
    name: 'revoke',
    args: '<id>',
    summary: 'revoke one of your sessions (its watch streams end)',
    flags: [],
    examples: ['fleetplane ctl sessions revoke 6f1c...'],
    async run(ctx, args) {
      noExtraArgs(args, 1);
      const id = requireArg(args[0], 'session ID');
      await ctx.client.auth.revokeSession('me', id, { signal: ctx.signal });
      ctx.out.done(`revoked session ${id}`, { id, revoked: true });
    },
  },
];

export const loginCommand = login;
export const logoutCommand = logout;

export const sessionsGroup: CommandGroup = {
  name: 'sessions',
  aliases: ['session'],
  summary: 'your user sessions (from ctl login or the browser): list and revoke',
  commands: sessionCommands,
};
