/**
 * The test OpenID provider: oidc-provider (a certified implementation) in its own process on
 * 127.0.0.1, with a scripted login (accounts by username) and `/__test/` endpoints to rotate the
 * signing key, change TTLs and the device flow's pacing, and read what it saw. Started by
 * provider-process.ts; prints `{"issuer": ...}` on stdout once it listens.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ErrorOut, type ProviderContext, type ProviderMiddleware } from 'oidc-provider';
import type { ProviderConfig, ProviderKnobs, ProviderStats, TestAccount, TokenRequestRecord } from './provider-config.js';

const configPath = process.argv[2];
if (!configPath) throw new Error('usage: provider-main CONFIG.json');
const config = JSON.parse(readFileSync(configPath, 'utf8')) as ProviderConfig;

const knobs: ProviderKnobs = { idTokenTtlS: 3600, deviceCodeTtlS: 600, deviceIntervalS: null, slowDownPolls: 0 };
let jwksRequests = 0;
const tokenRequests: TokenRequestRecord[] = [];

function signingKey(): JsonWebKey & { kid: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

/** The first key signs (oidc-provider picks the first matching key). */
const keys = [signingKey()];

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Upstream of every provider route: counts, and the device flow's pacing knobs. */
const observe: ProviderMiddleware = async (ctx, next) => {
  if (ctx.path === '/jwks') jwksRequests += 1;
  await next();
  if (ctx.path === '/device/auth' && ctx.status === 200 && isRecord(ctx.body) && knobs.deviceIntervalS !== null) {
    ctx.body = { ...ctx.body, interval: knobs.deviceIntervalS };
  }
  if (ctx.path === '/token' && ctx.method === 'POST') {
    let error = isRecord(ctx.body) && typeof ctx.body.error === 'string' ? ctx.body.error : null;
    if (error === 'authorization_pending' && knobs.slowDownPolls > 0) {
      knobs.slowDownPolls -= 1;
      error = 'slow_down';
      ctx.body = { error, error_description: 'test provider: polling too fast' };
    }
    const authorization = ctx.headers.authorization;
    const clientAuth = typeof authorization === 'string' && /^basic /i.test(authorization) ? 'basic' : 'body';
    tokenRequests.push({ at: Date.now(), error, clientAuth });
    if (tokenRequests.length > 100) tokenRequests.shift();
  }
};

function findAccount(sub: string): TestAccount | undefined {
  return config.accounts.find((a) => a.sub === sub);
}

function buildProvider(issuer: string): Provider {
  const provider = new Provider(issuer, {
    clients: config.clients.map((c) => ({
      ...c,
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
    })),
    jwks: { keys },
    cookies: { keys: config.cookieKeys },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: ['openid', 'offline_access', 'email', 'profile'],
    async findAccount(_ctx, sub) {
      const account = findAccount(sub);
      if (!account) return undefined;
      return {
        accountId: account.sub,
        claims: () => ({
          sub: account.sub,
          ...(account.email === undefined ? {} : { email: account.email, email_verified: account.emailVerified ?? false }),
          ...(account.name === undefined ? {} : { name: account.name }),
        }),
      };
    },
    pkce: { required: () => true },
    ttl: {
      IdToken: () => knobs.idTokenTtlS,
      DeviceCode: () => knobs.deviceCodeTtlS,
      AccessToken: 600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 3600,
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async renderError(ctx: ProviderContext, out: ErrorOut) {
      ctx.body = page('Error', `<pre id="error">${escapeHtml(JSON.stringify(out))}</pre>`);
    },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      deviceFlow: {
        enabled: true,
        async userCodeInputSource(ctx, form, out) {
          const error = out ? `<p id="error">${escapeHtml(out.error)}</p>` : '';
          ctx.body = page('Enter code', `${error}${form}`);
        },
        async userCodeConfirmSource(ctx, form, _client, _deviceInfo, userCode) {
          ctx.body = page('Confirm device', `<p id="user-code">${escapeHtml(userCode)}</p>${form}`);
        },
        async successSource(ctx) {
          ctx.body = page('Signed in', '<p id="device-success">Sign-in complete</p>');
        },
      },
    },
  });
  provider.use(observe);
  return provider;
}

/** The request body as text, at most 64 KiB. */
async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 64 * 1024) throw new Error('request body too large');
  }
  return body;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

/** The login and consent pages: what a real provider's UI would do, scripted. */
async function interaction(provider: Provider, req: IncomingMessage, res: ServerResponse, uid: string, action: string | undefined): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, 'text/plain', 'interaction mismatch');
  const base = `/interaction/${uid}`;
  if (req.method === 'GET' && action === undefined) {
    const forms =
      details.prompt.name === 'login'
        ? `<form id="login" method="post" action="${base}/login"><input type="text" name="username" value=""></form>`
        : `<form id="confirm" method="post" action="${base}/confirm"></form><form id="abort" method="post" action="${base}/abort"></form>`;
    return send(res, 200, 'text/html', page(details.prompt.name, `<p id="prompt">${escapeHtml(details.prompt.name)}</p>${forms}`));
  }
  if (req.method !== 'POST') return send(res, 405, 'text/plain', 'method not allowed');
  if (action === 'login') {
    const username = new URLSearchParams(await readBody(req)).get('username') ?? '';
    const account = config.accounts.find((a) => a.username === username);
    if (!account) {
      return send(res, 401, 'text/html', page('login', `<p id="error">unknown user</p><form id="login" method="post" action="${base}/login"><input type="text" name="username" value=""></form>`));
    }
    return provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
  }
  if (action === 'confirm') {
    const accountId = details.session?.accountId;
    const clientId = details.params.client_id;
    if (accountId === undefined || typeof clientId !== 'string') return send(res, 400, 'text/plain', 'no session');
    const grant = (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ?? new provider.Grant({ accountId, clientId });
    const missing = details.prompt.details;
    if (Array.isArray(missing.missingOIDCScope)) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (Array.isArray(missing.missingOIDCClaims)) grant.addOIDCClaims(missing.missingOIDCClaims.map(String));
    if (isRecord(missing.missingResourceScopes)) {
      for (const [resource, scopes] of Object.entries(missing.missingResourceScopes)) {
        if (Array.isArray(scopes)) grant.addResourceScope(resource, scopes.join(' '));
      }
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
  }
  if (action === 'abort') {
    return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'End-User aborted interaction' }, { mergeWithLastSubmission: false });
  }
  send(res, 404, 'text/plain', 'not found');
}

async function admin(req: IncomingMessage, res: ServerResponse, path: string, rebuild: () => void): Promise<void> {
  if (req.headers['x-test-admin'] !== config.adminToken) return send(res, 403, 'text/plain', 'forbidden');
  if (req.method === 'GET' && path === '/__test/stats') {
    const stats: ProviderStats = { jwksRequests, tokenRequests, kids: keys.map((k) => k.kid) };
    return send(res, 200, 'application/json', JSON.stringify(stats));
  }
  if (req.method === 'POST' && path === '/__test/rotate-key') {
    keys.unshift(signingKey());
    rebuild();
    return send(res, 200, 'application/json', JSON.stringify({ kid: keys[0]?.kid }));
  }
  if (req.method === 'POST' && path === '/__test/knobs') {
    Object.assign(knobs, JSON.parse(await readBody(req)) as Partial<ProviderKnobs>);
    return send(res, 200, 'application/json', JSON.stringify(knobs));
  }
  send(res, 404, 'text/plain', 'not found');
}

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  let provider = buildProvider(issuer);
  let handle = provider.callback();
  // A new instance with the new key list; sessions and grants live in oidc-provider's
  // module-wide memory adapter, so they survive it.
  const rebuild = (): void => {
    provider = buildProvider(issuer);
    handle = provider.callback();
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    const route = /^\/interaction\/([^/]+)(?:\/(login|confirm|abort))?$/.exec(path);
    const work = path.startsWith('/__test/')
      ? admin(req, res, path, rebuild)
      : route?.[1] !== undefined
        ? interaction(provider, req, res, route[1], route[2])
        : Promise.resolve(handle(req, res));
    work.catch((err: unknown) => {
      process.stderr.write(`test provider: ${req.method} ${path}: ${err instanceof Error ? err.stack : String(err)}\n`);
      if (!res.headersSent) send(res, 500, 'text/plain', String(err));
      else res.end();
    });
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
