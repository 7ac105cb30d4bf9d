import { describe, expect, it } from 'vitest';
import { ERRORS, ERROR_CODES, type ErrorCode } from '../../src/protocol/index.js';
import {
  AgentError,
  AuthError,
  CompactedError,
  ConflictError,
  FleetplaneClient,
  FleetplaneError,
  LoginError,
  NotFoundError,
  ProtocolError,
  ServerError,
  TransportError,
  UnavailableError,
  ValidationError,
  isRetryable,
  type FleetplaneErrorInit,
} from '../../src/client/index.js';

type Fetch = (input: string, init: RequestInit) => Promise<Response>;

function clientWith(fetch: Fetch): FleetplaneClient {
  return new FleetplaneClient({ baseUrl: 'http://fleet.test/', token: 't', fetch });
}

const answer = (status: number, body: string, headers: Record<string, string> = {}): Fetch => async () => new Response(body, { status, headers });

const FAMILIES: Record<ErrorCode, new (init: FleetplaneErrorInit) => FleetplaneError> = {
  bad_request: ValidationError,
  validation_failed: ValidationError,
  policy_invalid: ValidationError,
  policy_test_failed: ValidationError,
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  headers_too_large: ValidationError,
  unauthorized: AuthError,
  forbidden: AuthError,
  not_found: NotFoundError,
  conflict: ConflictError,
  already_exists: ConflictError,
  field_owned_elsewhere: ConflictError,
  precondition_failed: ConflictError,
  revision_compacted: CompactedError,
  too_many_requests: UnavailableError,
  request_timeout: UnavailableError,
  unavailable: UnavailableError,
  slow_consumer: UnavailableError,
  too_many_connections: UnavailableError,
  agent_error: AgentError,
  agent_not_connected: AgentError,
  internal: ServerError,
  login_failed: LoginError,
  sign_in_refused: LoginError,
  authorization_pending: LoginError,
  slow_down: LoginError,
  access_denied: LoginError,
  expired_token: LoginError,
};

describe('error mapping', () => {
  it.each(ERROR_CODES)('maps %s to its family with code, status, details and name', async (code) => {
    const details = { path: '/hostname' };
    const c = clientWith(answer(ERRORS[code].status, JSON.stringify({ error: { code, message: `msg ${code}`, details } })));
    const err = await c.devices.get('o', 'd').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FAMILIES[code]);
    expect(err).toBeInstanceOf(FleetplaneError);
    const e = err as FleetplaneError;
    expect(e.code).toBe(code);
    expect(e.status).toBe(ERRORS[code].status);
    expect(e.message).toBe(`msg ${code}`);
    expect(e.details).toEqual(details);
    expect(e.name).toBe(FAMILIES[code].name);
  });

  it('keeps the cause and the body when an error body is not JSON (a proxy page)', async () => {
    const c = clientWith(answer(502, '<html>Bad Gateway</html>'));
    const err = (await c.organizations.list().catch((e: unknown) => e)) as FleetplaneError;
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.status).toBe(502);
    expect(err.code).toBe('unavailable');
    expect(err.cause).toBeInstanceOf(SyntaxError);
    expect(err.details).toEqual({ body: '<html>Bad Gateway</html>' });
  });

  it('explains JSON without the envelope in the cause', async () => {
    const err = (await clientWith(answer(404, '{"oops":1}')).organizations.get('x').catch((e: unknown) => e)) as FleetplaneError;
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.cause).toBeInstanceOf(ProtocolError);
  });

  it('classifies an unknown code by status and keeps it', async () => {
    const body = JSON.stringify({ error: { code: 'brand_new', message: 'new' } });
    const err = (await clientWith(answer(409, body)).organizations.get('x').catch((e: unknown) => e)) as FleetplaneError;
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.details).toMatchObject({ server_code: 'brand_new' });
  });

  it('wraps a network failure in TransportError with the cause', async () => {
    const boom = new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') });
    const err = (await clientWith(async () => Promise.reject(boom)).organizations.list().catch((e: unknown) => e)) as FleetplaneError;
    expect(err).toBeInstanceOf(TransportError);
    expect(err.code).toBe('network_error');
    expect(err.status).toBe(0);
    expect(err.cause).toBe(boom);
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('rethrows an abort as the signal reason, not as a FleetplaneError', async () => {
    const ac = new AbortController();
    const reason = new Error('user gave up');
    ac.abort(reason);
    const never: Fetch = async (_i, init) => Promise.reject(init.signal?.reason);
    expect(await clientWith(never).organizations.list({ signal: ac.signal }).catch((e: unknown) => e)).toBe(reason);
  });

  it('rejects a 2xx body that is not JSON with ProtocolError and its cause', async () => {
    const err = (await clientWith(answer(200, 'not json')).organizations.get('x').catch((e: unknown) => e)) as FleetplaneError;
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err.cause).toBeInstanceOf(SyntaxError);
  });

  it('only 401/403/404 are not retryable', () => {
    for (const code of ERROR_CODES) {
      const err = new FAMILIES[code]({ code, message: '' });
      expect(isRetryable(err)).toBe(!['unauthorized', 'forbidden', 'not_found'].includes(code) && !(err instanceof LoginError));
    }
    expect(isRetryable(new TransportError({ code: 'network_error', message: '' }))).toBe(true);
  });
});
