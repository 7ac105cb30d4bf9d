import type { FastifyReply } from 'fastify';
import { HEADERS } from '../../protocol/index.js';
import type { App } from './app.js';

/** The value of `X-Content-Type-Options` on every response. */
export const NO_SNIFF = 'nosniff';

function setNoSniff(reply: FastifyReply): void {
  void reply.header(HEADERS.contentTypeOptions, NO_SNIFF);
}

/**
 * Every response of the public listener says `X-Content-Type-Options:
 * nosniff` (the API's JSON, errors, the dashboard), so a browser never takes
 * a body for a script or a page it guessed. Set when the request arrives, so
 * that whatever step replies carries it; what is answered before a request
 * exists (raw-error-response.ts) and the streams' heads write it themselves.
 */
export function noSniff(app: App): void {
  app.addHook('onRequest', (_req, reply, done) => {
    setNoSniff(reply);
    done();
  });
}

/** `handler` for Fastify's framework errors (a malformed URL), which reply before any hook runs: with the header too. */
export function withNoSniff<Req, Err>(handler: (err: Err, req: Req, reply: FastifyReply) => void): (err: Err, req: Req, reply: FastifyReply) => void {
  return (err, req, reply) => {
    setNoSniff(reply);
    handler(err, req, reply);
  };
}
