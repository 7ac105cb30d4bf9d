import type { IncomingHttpHeaders } from 'node:http';
import { HEADERS, parseBearer } from '../../protocol/index.js';

/**
 * The secret of a request's `Authorization: Bearer <secret>` header, for
 * every entry point; undefined when the header is absent or malformed.
 */
export function bearerSecret(headers: IncomingHttpHeaders): string | undefined {
  return parseBearer(headers[HEADERS.authorization]);
}
