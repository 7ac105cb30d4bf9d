import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  COOKIES,
  CreatedSession,
  DeviceLogin,
  DeviceLoginPoll,
  DeviceLoginStart,
  HEADERS,
  LOGIN_COOKIE_PATH,
  LoginMethods,
  OidcCallbackQuery,
  OidcLoginQuery,
  PENDING_LOGIN_TTL_SECONDS,
  ROUTES,
  Session,
  SessionInfo,
  type DeviceLoginClient,
} from '../../../protocol/index.js';
import { ApiError } from '../../errors.js';
import { cookieValue, identityAnswer, secureCookies, serverOrigin, setCookie, type LoginService } from '../../login/index.js';
import type { SessionPrincipal } from '../../principal/index.js';
import type { SessionTerms } from '../../store/index.js';
import type { App } from '../app.js';
import type { RouteModule, ServerContext } from '../context.js';
import { empty, errors, json } from '../route-responses.js';

/** 404 on every login route of a server without `--oidc-issuer`. */
function configured(login: LoginService | undefined): LoginService {
  if (!login) throw new ApiError('not_found', 'user login is not configured on this server (no --oidc-issuer)');
  return login;
}

/** `return_to`: a path on this server, never another origin (`//host`, `/\host`). */
function returnPath(value: string | undefined): string {
  if (value === undefined) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\') || /[\u0000-\u001f]/.test(value)) {
    throw new ApiError('validation_failed', 'return_to must be a path on this server, starting with one /', { path: '/return_to', expected: 'a path' });
  }
  return value;
}

function terms(login: LoginService, req: FastifyRequest, description: string): SessionTerms {
  const ua = req.headers[HEADERS.userAgent];
  return {
    ttlSeconds: login.sessionTtlSeconds,
    maxAgeSeconds: login.sessionMaxAgeSeconds,
    source: req.ip,
    userAgent: typeof ua === 'string' ? ua : undefined,
    description,
  };
}

/** The caller's session; 403 for any other credential (the admin token, a key). */
export async function callerSession(ctx: ServerContext, req: FastifyRequest): Promise<SessionPrincipal> {
  const p = await ctx.access.principalOf(req);
  if (p.type !== 'user' || p.credential !== 'session') throw new ApiError('forbidden', 'only a user session has a session (sign in with ctl login or the browser)');
  return p;
}

/** The login routes (docs/protocol.md "Users and login"): browser and device login, the caller's session. */
export function authRoutes(login: LoginService | undefined): RouteModule {
  return { register: (app, ctx) => register(app, ctx, login) };
}

function register(app: App, ctx: ServerContext, login: LoginService | undefined): void {
  const logins = ctx.store.logins;
  const origin = (req: FastifyRequest): string => serverOrigin(req, login?.publicUrl ?? ctx.settings.publicUrl);
  const clearLoginCookie = (req: FastifyRequest, reply: FastifyReply): void => {
    void reply.header(HEADERS.setCookie, setCookie(COOKIES.login, '', { path: LOGIN_COOKIE_PATH, maxAge: 0, secure: secureCookies(origin(req)) }));
  };

  app.get(
    ROUTES.authMethods,
    {
      schema: {
        tags: ['login'],
        operationId: 'loginMethods',
        security: [],
        summary: 'How one may sign in here (no credential): a token always; the identity provider when --oidc-issuer is set',
        response: { 200: json('How one may sign in here.', LoginMethods), ...errors([400]) },
      },
    },
    async () => ({ token: true, oidc: login !== undefined }),
  );

  app.get(
    ROUTES.authOidcLogin,
    {
      schema: {
        tags: ['login'],
        operationId: 'startBrowserLogin',
        security: [],
        summary: 'Start a browser login at the identity provider (302 there; no credential)',
        querystring: OidcLoginQuery,
        response: { 302: empty('To the identity provider, with the fleetplane_login cookie.'), ...errors([400, 404, 429, 503], {}, { retryAfter: true }) },
      },
    },
    async (req, reply) => {
      const l = configured(login);
      const returnTo = returnPath(req.query.return_to);
      const redirectUri = `${origin(req)}${ROUTES.authOidcCallback}`;
      let start;
      try {
        start = await l.oidc.startBrowserLogin({ redirectUri, ...(req.query.login_hint === undefined ? {} : { loginHint: req.query.login_hint }) });
      } catch (err) {
        throw identityAnswer(err);
      }
      const handle = await logins.createPendingLogin('browser', req.ip, { ...start.pending, returnTo }, PENDING_LOGIN_TTL_SECONDS);
      void reply.header(HEADERS.setCookie, setCookie(COOKIES.login, handle, { path: LOGIN_COOKIE_PATH, maxAge: PENDING_LOGIN_TTL_SECONDS, secure: secureCookies(origin(req)) }));
      return reply.status(302).header(HEADERS.location, start.url).send(null);
    },
  );

  app.get(
    ROUTES.authOidcCallback,
    {
      schema: {
        tags: ['login'],
        operationId: 'finishBrowserLogin',
        security: [],
        summary: 'The identity provider\'s redirect: finishes a browser login (303 to return_to with the session cookie)',
        querystring: OidcCallbackQuery,
        response: { 303: empty('To return_to, with the fleetplane_session cookie.'), ...errors([400, 401, 403, 404, 503], {}, { retryAfter: true }) },
      },
    },
    async (req, reply) => {
      const l = configured(login);
      clearLoginCookie(req, reply);
      const handle = cookieValue(req.headers, COOKIES.login);
      const pending = handle === undefined ? undefined : await logins.takeBrowserLogin(handle);
      if (!pending) throw new ApiError('login_failed', 'no login of this browser is waiting to finish (expired, used, or started elsewhere)', { reason: 'login_expired' });
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(req.query)) if (typeof v === 'string') params.set(k, v);
      let signedIn;
      try {
        signedIn = await l.oidc.finishBrowserLogin(params, pending);
      } catch (err) {
        throw identityAnswer(err);
      }
      const done = await logins.signIn(signedIn.identity, l.admins, terms(l, req, 'browser'));
      const maxAge = (Date.parse(done.session.max_expires_at) - Date.now()) / 1000;
      void reply.header(HEADERS.setCookie, [
        setCookie(COOKIES.login, '', { path: LOGIN_COOKIE_PATH, maxAge: 0, secure: secureCookies(origin(req)) }),
        setCookie(COOKIES.session, done.token, { path: '/', maxAge, secure: secureCookies(origin(req)) }),
      ]);
      return reply.status(303).header(HEADERS.location, pending.returnTo).send(null);
    },
  );

  app.post(
    ROUTES.authDevice,
    {
      schema: {
        tags: ['login'],
        operationId: 'startDeviceLogin',
        security: [],
        summary: 'Start a device login (RFC 8628) for ctl or an agent (no credential)',
        body: Type.Optional(DeviceLoginStart),
        response: { 200: json('The code to show the user, and the handle to poll with.', DeviceLogin), ...errors([400, 404, 429, 503, 413], {}, { retryAfter: true }) },
      },
    },
    async (req) => {
      const l = configured(login);
      let authorization;
      try {
        authorization = await l.oidc.startDeviceLogin();
      } catch (err) {
        throw identityAnswer(err);
      }
      const client: DeviceLoginClient = req.body?.client ?? 'ctl';
      const expiresIn = Math.max(1, Math.floor((authorization.expiresAt - Date.now()) / 1000));
      const handle = await logins.createPendingLogin('device', req.ip, { ...authorization, client }, expiresIn);
      return {
        device_login: handle,
        user_code: authorization.userCode,
        verification_uri: authorization.verificationUri,
        ...(authorization.verificationUriComplete === undefined ? {} : { verification_uri_complete: authorization.verificationUriComplete }),
        expires_in: expiresIn,
        interval: authorization.intervalS,
      };
    },
  );

  app.post(
    ROUTES.authDeviceToken,
    {
      schema: {
        tags: ['login'],
        operationId: 'pollDeviceLogin',
        security: [],
        summary: 'Poll a device login: the session once the user approved (no credential)',
        body: DeviceLoginPoll,
        response: { 200: json('Approved: the session token, shown once.', CreatedSession), ...errors([400, 401, 403, 404, 410, 413, 503], {}, { retryAfter: true }) },
      },
    },
    async (req) => {
      const l = configured(login);
      const handle = req.body.device_login;
      const slot = await logins.claimDevicePoll(handle);
      if (slot.status === 'unknown') throw new ApiError('expired_token', 'no such device login (expired, finished, or never started)');
      if (slot.status === 'too_soon') throw new ApiError('slow_down', 'polled sooner than the interval: add 5 seconds to it');
      const d = slot.data;
      let step;
      try {
        step = await l.oidc.pollDeviceLogin({ ...d, verificationUriComplete: d.verificationUriComplete });
      } catch (err) {
        const answer = identityAnswer(err);
        // Transient failures keep the login: the client polls again.
        if (answer.code !== 'unavailable') await logins.deletePendingLogin(handle);
        throw answer;
      }
      if (step.status === 'pending') throw new ApiError('authorization_pending');
      if (step.status === 'slow_down') {
        await logins.slowDownDeviceLogin(handle);
        throw new ApiError('slow_down');
      }
      await logins.deletePendingLogin(handle);
      return logins.signIn(step.result.identity, l.admins, terms(l, req, d.client)).then(({ token, session, user }) => ({ token, session, user }));
    },
  );

  app.get(
    ROUTES.authSession,
    {
      schema: {
        tags: ['sessions'],
        operationId: 'getOwnSession',
        summary: 'The caller\'s session and user',
        response: { 200: json('The session and its user.', SessionInfo), ...errors([401, 403]) },
      },
    },
    async (req) => {
      const p = await callerSession(ctx, req);
      const [session, user] = await Promise.all([logins.getSession(p.tokenId), logins.getUser(p.userId)]);
      if (!session || !user) throw new ApiError('unauthorized', 'the session ended');
      return { session, user };
    },
  );

  app.post(
    ROUTES.authSessionRefresh,
    {
      schema: {
        tags: ['sessions'],
        operationId: 'refreshOwnSession',
        summary: 'Extend the caller\'s session by --session-ttl (never past its max_expires_at)',
        response: { 200: json('The session, with its new expires_at.', Session), ...errors([401, 403]) },
      },
    },
    async (req) => {
      const p = await callerSession(ctx, req);
      const session = await logins.refreshSession(p.tokenId, ctx.settings.sessionTtl);
      if (!session) throw new ApiError('unauthorized', 'the session ended');
      return session;
    },
  );

  app.post(
    ROUTES.authLogout,
    {
      schema: {
        tags: ['sessions'],
        operationId: 'logout',
        summary: 'Revoke the caller\'s session (and clear the browser\'s cookie)',
        response: { 204: empty('Revoked.'), ...errors([401, 403]) },
      },
    },
    async (req, reply) => {
      const p = await callerSession(ctx, req);
      await logins.revokeSession(p.userId, p.tokenId);
      void reply.header(HEADERS.setCookie, setCookie(COOKIES.session, '', { path: '/', maxAge: 0, secure: secureCookies(origin(req)) }));
      return reply.status(204).send(null);
    },
  );
}
