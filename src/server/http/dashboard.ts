import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { ROUTES } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { App } from './app.js';
import type { RouteModule } from './context.js';

/** Where `npm run build` puts the dashboard: dist/dashboard of the package (this file is in src/ or dist/ server/http). */
export function defaultDashboardDir(): string {
  return join(fileURLToPath(new URL('../../../', import.meta.url)), 'dist', 'dashboard');
}

/**
 * The page may load only what this server serves, and nothing may frame it:
 * a script injected into the page could reach no other site, and the page
 * can't be clickjacked. (`X-Content-Type-Options: nosniff` is on every
 * response of the server: no-sniff.ts.)
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** Asset names carry a content hash: a name never changes its bytes. */
const ASSET = /^app-[A-Za-z0-9_-]+\.(js|css)$/;

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}

/**
 * Serves the dashboard's static bundle: `/` (index.html, revalidated on
 * every load so a new build is picked up) and `/ui/<hashed asset>` (cached
 * for good). Without a built bundle, `/` answers 503 `unavailable` saying how
 * to build it.
 */
export function dashboardRoutes(dir: string = defaultDashboardDir()): RouteModule {
  return {
    register(app: App): void {
      void app.register(fastifyStatic, { root: dir, serve: false });
      app.get(ROUTES.dashboard, { schema: { hide: true } }, async (_req, reply) => {
        if (!existsSync(join(dir, 'index.html'))) throw new ApiError('unavailable', 'the dashboard is not built: run npm run build');
        return secure(reply).header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false });
      });
      app.get<{ Params: { file: string } }>(ROUTES.dashboardAsset, { schema: { hide: true } }, async (req, reply) => {
        if (!ASSET.test(req.params.file) || !existsSync(join(dir, req.params.file))) throw new ApiError('not_found', 'no such dashboard file');
        return secure(reply).header('cache-control', 'public, max-age=31536000, immutable').sendFile(req.params.file, { cacheControl: false });
      });
    },
  };
}
