import { resolve } from 'node:path';
import { UsageError } from '../exit-codes.js';
import type { CommandGroup, LocalCommand } from './command-spec.js';
import { ConfigError, loadConfig, saveConfig, type ContextEntry } from './config-file.js';
import type { LocalContext } from './context.js';
import { noExtraArgs, requireArg } from './flag-values.js';

function contextName(args: readonly string[]): string {
  noExtraArgs(args, 1);
  return requireArg(args[0], 'context NAME');
}

const setContext: LocalCommand = {
  kind: 'local',
  name: 'set-context',
  args: '<name>',
  summary: 'add a context, or change the fields given of an existing one',
  details: [
    'A context is a server, its token, and optionally a default organization and a CA file, kept in',
    'the config file (mode 0600). The first context added becomes the current one. An empty value',
    '(--org "") removes the field. Flags beat FLEETPLANE_URL/FLEETPLANE_TOKEN, which beat the context;',
    "a server given by flag or environment that differs from the context's never gets its token.",
  ].join('\n'),
  flags: [
    'config',
    { name: 'server', help: 'server base URL (required for a new context)' },
    { name: 'token', help: 'bearer token: admin or organization token' },
    { name: 'org', help: 'default organization (name or id) of commands run in this context' },
    { name: 'ca-file', help: 'PEM certificates to trust for this https server (kept as an absolute path)' },
  ],
  examples: [
    'fleetplane ctl config set-context prod --server https://fleet.example.com --token "$TOKEN" --org acme',
    'fleetplane ctl config set-context prod --org acme-eu',
    'fleetplane ctl config set-context lab --server https://10.0.0.5:8443 --token "$LAB" --ca-file ./lab-ca.pem',
  ],
  async run(ctx, args) {
    const name = contextName(args);
    const f = ctx.flags;
    const loaded = await loadConfig(ctx.configPath);
    const old = loaded.config.contexts[name];
    const server = f.string('server') ?? old?.server;
    if (server === undefined || server === '') throw new UsageError(`a new context needs --server`);
    if (!/^https?:\/\/[^/]/.test(server)) throw new UsageError(`--server must be an http(s) URL, not ${JSON.stringify(server)}`);
    const entry: ContextEntry = { ...old, server };
    const caFile = f.string('ca-file');
    const given: Array<['token' | 'org' | 'ca-file', string | undefined]> = [
      ['token', f.string('token')],
      ['org', f.string('org')],
      ['ca-file', caFile === undefined || caFile === '' ? caFile : resolve(ctx.cwd, caFile)],
    ];
    for (const [field, value] of given) {
      if (value === '') delete entry[field];
      else if (value !== undefined) entry[field] = value;
    }
    const config = { ...loaded.config, contexts: { ...loaded.config.contexts, [name]: entry } };
    const becomesCurrent = config['current-context'] === undefined;
    if (becomesCurrent) config['current-context'] = name;
    await saveConfig(ctx.configPath, config);
    ctx.out.done(`context "${name}" ${old ? 'changed' : 'added'} in ${ctx.configPath}${becomesCurrent ? ' (now the current context)' : ''}`, { name, current: config['current-context'] === name });
  },
};

const useContext: LocalCommand = {
  kind: 'local',
  name: 'use-context',
  args: '<name>',
  summary: 'make a context the current one',
  flags: ['config'],
  examples: ['fleetplane ctl config use-context prod'],
  async run(ctx, args) {
    const name = contextName(args);
    const { config } = await loadConfig(ctx.configPath);
    if (!config.contexts[name]) throw new ConfigError(`no context "${name}" in ${ctx.configPath} (see: fleetplane ctl config get-contexts)`);
    await saveConfig(ctx.configPath, { ...config, 'current-context': name });
    ctx.out.done(`switched to context "${name}"`, { name, current: true });
  },
};

interface ContextRow {
  current: boolean;
  name: string;
  server: string;
  org: string | undefined;
  'ca-file': string | undefined;
}

const getContexts: LocalCommand = {
  kind: 'local',
  name: 'get-contexts',
  summary: 'list the contexts (never their tokens); * marks the current one',
  flags: ['config', 'output'],
  examples: ['fleetplane ctl config get-contexts', 'fleetplane ctl config get-contexts -o json'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const { config } = await loadConfig(ctx.configPath);
    const rows: ContextRow[] = Object.entries(config.contexts).map(([name, c]) => ({
      current: name === config['current-context'],
      name,
      server: c.server,
      org: c.org,
      'ca-file': c['ca-file'],
    }));
    ctx.out.list(rows, [
      { header: 'CURRENT', value: (r) => (r.current ? '*' : ' ') },
      { header: 'NAME', value: (r) => r.name },
      { header: 'SERVER', value: (r) => r.server },
      { header: 'ORG', value: (r) => r.org },
      { header: 'CA FILE', value: (r) => r['ca-file'] },
    ]);
  },
};

const currentContext: LocalCommand = {
  kind: 'local',
  name: 'current-context',
  summary: 'print the name of the current context (exit 1 when there is none)',
  flags: ['config'],
  examples: ['fleetplane ctl config current-context'],
  async run(ctx: LocalContext, args) {
    noExtraArgs(args, 0);
    const { config } = await loadConfig(ctx.configPath);
    const current = config['current-context'];
    if (current === undefined) throw new ConfigError(`no current context in ${ctx.configPath} (see: fleetplane ctl config set-context --help)`);
    ctx.out.line(current);
  },
};

const deleteContext: LocalCommand = {
  kind: 'local',
  name: 'delete-context',
  args: '<name>',
  summary: 'remove a context (when it was the current one, none is current afterwards)',
  flags: ['config'],
  examples: ['fleetplane ctl config delete-context lab'],
  async run(ctx, args) {
    const name = contextName(args);
    const { config } = await loadConfig(ctx.configPath);
    if (!config.contexts[name]) throw new ConfigError(`no context "${name}" in ${ctx.configPath}`);
    const { [name]: _removed, ...contexts } = config.contexts;
    const next = { ...config, contexts };
    if (next['current-context'] === name) delete next['current-context'];
    await saveConfig(ctx.configPath, next);
    ctx.out.done(`deleted context "${name}"`, { name, deleted: true });
  },
};

export const configGroup: CommandGroup = {
  name: 'config',
  aliases: [],
  summary: 'contexts: servers, tokens and default organizations, kept in the config file',
  commands: [setContext, useContext, getContexts, currentContext, deleteContext],
};
