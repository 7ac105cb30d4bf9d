import type { FastifyRequest } from 'fastify';
import { MEDIA } from '../../protocol/index.js';
import { ApiError, validationFailed } from '../errors.js';
import type { App } from './app.js';
import { findIllFormed } from './well-formed.js';

type Done = (err: Error | null, body?: unknown) => void;
type TextParser = (req: FastifyRequest, body: string, done: Done) => void;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A body's text; invalid UTF-8 is 400 `bad_request`, never replaced by U+FFFD and stored. */
export function utf8Body(raw: Buffer): string {
  try {
    return UTF8.decode(raw);
  } catch (err) {
    throw new ApiError('bad_request', 'the body is not valid UTF-8', undefined, { cause: err });
  }
}

/**
 * Request bodies are JSON (RFC 8259: UTF-8) and nothing else: any other
 * media type is 415. Invalid UTF-8 is refused, not replaced by U+FFFD and
 * stored; a parsed body is checked for what no field may hold (well-formed.ts),
 * so routes without a body schema (agent calls) are covered too.
 */
export function acceptJsonBodies(app: App): void {
  // Fastify's own parser, for its __proto__ and constructor poisoning checks.
  const parseText = app.getDefaultJsonParser('error', 'error') as TextParser;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(MEDIA.json, { parseAs: 'buffer' }, (req, raw: Buffer, done: Done) => {
    let text: string;
    try {
      text = utf8Body(raw);
    } catch (err) {
      done(err as ApiError);
      return;
    }
    parseText(req, text, (err, body) => {
      if (err) return done(err);
      const bad = findIllFormed(body);
      if (bad) return done(validationFailed(bad.path || '/', bad.expected));
      done(null, body);
    });
  });
}
