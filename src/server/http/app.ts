import Fastify, { LogController, type FastifyHttp2SecureOptions, type FastifyInstance, type RawReplyDefaultExpression, type RawRequestDefaultExpression, type RawServerDefault } from 'fastify';
import type { Http2SecureServer } from 'node:http2';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError } from '../errors.js';
import { errorHandler } from './error-handler.js';
import type { RouteModule, ServerContext } from './context.js';
import { registerSystemRoutes } from './routes/system.js';
import { registerOrganizationRoutes } from './routes/organizations.js';
import { registerTokenSessionRoutes } from './routes/token-session.js';
import { registerDeviceRoutes } from './routes/devices.js';
import { registerSecurityGroupRoutes } from './routes/security-groups.js';
import { registerPolicyRoutes } from './routes/policy.js';
import { registerCredentialRoutes } from './routes/credentials.js';
import { registerDeviceTokenRoutes } from './routes/device-tokens.js';
import { registerAuditRoutes } from './routes/audit.js';
import { auditRoutes } from './audit-routes.js';
import { registerMemberRoutes } from './routes/members.js';
import { registerApiKeyRoutes } from './routes/api-keys.js';
import type { TlsPair } from './tls-certificate.js';
import { openApiOptions } from './openapi.js';
import { SchemaComponents } from './schema-components.js';
import { validatorCompiler } from './validator.js';
import { acceptJsonBodies } from './json-body.js';
import { clientErrorHandler } from './client-error.js';
import { limitBodyTime } from './body-timeout.js';
import { closeAfterReply, closeConnectionAfter } from './connection-close.js';
import { guardRoutes } from '../access/index.js';
import { answerHalfClosedRequests, applyHttp1Timeouts, http2ListenerOptions, httpListenerOptions, tlsListenerOptions } from './listener-options.js';
import { trackHttp2Sessions } from './http2-sessions.js';
import { refuseMalformedQueries, strictQueryStrings } from './query-string.js';
import { noSniff, withNoSniff } from './no-sniff.js';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  Logger,
  TypeBoxTypeProvider
>;

/** What only tests set when building the app (through `ServerTestHooks`). */
export interface AppTestHooks {
  /** Compile every route's schemas as the route is registered, not at its first request (see validator.ts). */
  eagerValidation?: boolean;
}

/**
 * Builds the HTTP API. Validation uses the protocol's TypeBox schemas (unknown
 * fields rejected, formats enforced), and the same schemas feed the OpenAPI
 * document, so the two can't drift.
 */
export async function buildApp(ctx: ServerContext, modules: readonly RouteModule[] = [], https?: TlsPair, testHooks: AppTestHooks = {}): Promise<App> {
  const options = {
    loggerInstance: ctx.logger,
    bodyLimit: ctx.settings.bodyLimit,
    // Per-request lines would dominate the log at fleet scale; metrics count requests instead.
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: false,
    // Our own hook answers during shutdown, with Retry-After (Fastify's 503 has none).
    return503OnClosing: false,
    // What fails before a request reaches a route still gets the catalog's error body.
    clientErrorHandler: clientErrorHandler(ctx.logger),
    frameworkErrors: withNoSniff(errorHandler),
    routerOptions: strictQueryStrings,
  };
  const listener = httpListenerOptions(ctx.settings, ctx.connections);
  // An HTTPS server has every method the routes and the gateway use of the HTTP one; only the type differs.
  type HttpInstance = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;
  type Http2Options = FastifyHttp2SecureOptions<Http2SecureServer, Logger>;
  const app = (
    https
      ? (Fastify({
          ...options,
          // The handler reads only what an HTTP/2 request has too (its method, url and headers).
          frameworkErrors: options.frameworkErrors as unknown as Http2Options['frameworkErrors'],
          http2: true,
          https: { ...https, ...http2ListenerOptions(ctx.connections), ...tlsListenerOptions(ctx.settings) },
        } satisfies Http2Options) as unknown as HttpInstance)
      : Fastify({ ...options, http: listener })
  ).withTypeProvider<TypeBoxTypeProvider>();
  if (https) {
    applyHttp1Timeouts(app.server, ctx.settings);
    trackHttp2Sessions(app.server, ctx.metrics.http2Sessions);
  }

  // No child logger per request: a watch stream keeps its request for as long as it lives, and a pino child
  // (bindings, level functions) is about 0.5 KB of each of 10,000 agents' share. The few lines logged for a
  // request name it themselves (error-handler.ts).
  app.setChildLoggerFactory((logger) => logger);
  app.setValidatorCompiler(validatorCompiler(testHooks.eagerValidation === true));
  acceptJsonBodies(app);
  // Hostile or slow clients: bounded connections, bounded body time, and no connection kept for one that can't proceed.
  ctx.connections.attach(app.server, { listener: 'api', perSource: true, evictIdle: true, logger: ctx.logger });
  limitBodyTime(app, ctx.settings.bodyTimeout);
  closeAfterReply(app);
  answerHalfClosedRequests(app.server, ctx.logger);
  noSniff(app);
  refuseMalformedQueries(app);

  // Response schemas document the API; bodies are serialized as they are.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => {
    const err = new ApiError('not_found', `no route ${req.method} ${req.url.split('?')[0] ?? ''}`);
    void reply.status(err.status).send(err.toBody());
  });

  app.addHook('onRequest', async (req, reply) => {
    if (ctx.draining()) closeConnectionAfter(req.raw, (name, value) => void reply.header(name, value));
  });

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    ctx.metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    ctx.metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  // Before any route: each gets its rule's guard, and one without a rule fails the start.
  app.addHook('onRoute', guardRoutes(ctx.access));
  // Every write route's handler runs in its request's audit scope; its 401s and 403s are recorded.
  app.addHook('onRoute', auditRoutes({ access: ctx.access, store: ctx.store, metrics: ctx.metrics, logger: ctx.logger }));

  const components = new SchemaComponents();
  app.addHook('onRoute', (route) => components.collect(route.schema));
  await app.register(swagger, openApiOptions(components));

  registerSystemRoutes(app, ctx);
  registerOrganizationRoutes(app, ctx);
  registerDeviceRoutes(app, ctx);
  registerSecurityGroupRoutes(app, ctx);
  registerPolicyRoutes(app, ctx);
  registerCredentialRoutes(app, ctx);
  registerDeviceTokenRoutes(app, ctx);
  registerAuditRoutes(app, ctx);
  registerMemberRoutes(app, ctx);
  registerApiKeyRoutes(app, ctx);
  registerTokenSessionRoutes(app, ctx);
  for (const m of modules) m.register(app, ctx);
  await app.ready();
  return app;
}
