import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HEADERS, MEDIA } from '../../protocol/index.js';
import { ApiError } from '../errors.js';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

function describe(issue: ValidationIssue, context: string | undefined): { path: string; expected: string } {
  let path = issue.instancePath ?? '';
  if (issue.keyword === 'additionalProperties' && typeof issue.params?.['additionalProperty'] === 'string') {
    path = `${path}/${issue.params['additionalProperty']}`;
    return { path: prefix(context, path), expected: 'no such field (unknown fields are rejected)' };
  }
  if (issue.keyword === 'required' && typeof issue.params?.['missingProperty'] === 'string') {
    return { path: prefix(context, `${path}/${issue.params['missingProperty']}`), expected: 'a value (the field is required)' };
  }
  return { path: prefix(context, path), expected: issue.message ?? 'a valid value' };
}

function prefix(context: string | undefined, path: string): string {
  return context && context !== 'body' ? `${context}:${path || '/'}` : path || '/';
}

/** Maps Fastify's and our errors to the catalog's status and body; logs the unexpected ones. */
export function toApiError(err: FastifyError | ApiError | Error): ApiError {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (Array.isArray(fe.validation) && fe.validation.length > 0) {
    const first = describe(fe.validation[0] ?? {}, fe.validationContext);
    return new ApiError('validation_failed', `${first.path}: ${first.expected}`, first);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', fe.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', `a request body must be ${MEDIA.json}`);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('bad_request', fe.message);
    default:
      break;
  }
  if (err instanceof SyntaxError) return new ApiError('bad_request', `malformed JSON: ${err.message}`);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError('bad_request', fe.message);
  }
  return new ApiError('internal', undefined, undefined, { cause: err });
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const api = toApiError(err);
  if (api.code === 'internal') req.log.error({ err, reqId: req.id, method: req.method, url: req.url }, 'request failed');
  else req.log.debug({ reqId: req.id, code: api.code, msg: api.message }, 'request rejected');
  const retryAfter = api.retryAfterHeader();
  if (retryAfter !== undefined) void reply.header(HEADERS.retryAfter, retryAfter);
  void reply.status(api.status).type('application/json').send(api.toBody());
}
