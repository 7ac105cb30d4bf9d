import type { Logger } from 'pino';
import { HEADERS, MEDIA, bearerAuthorization, paths, type ErrorCode, isErrorCode } from '../../protocol/index.js';
import type { Candidate } from './agent-waiters.js';
import type { Delivery } from './delivery.js';
import { signPrivateToken } from '../access/index.js';

/** Errors of a connection that never reached the other replica: nothing was sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Answers of the private listener that mean the agent never saw the request. */
const REFUSED: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'agent_not_connected',
  'too_many_requests',
  'unauthorized',
  'forbidden',
  'not_found',
  'bad_request',
  'validation_failed',
  'payload_too_large',
]);

export interface ForwarderOptions {
  replicaId: string;
  /** The shared HS256 key; without one this replica can't forward. */
  key: Uint8Array | undefined;
  /** How long past the answer deadline the other replica is waited for. */
  graceMs: number;
  logger: Logger;
}

function errorCodeOf(cause: unknown): string | undefined {
  if (typeof cause !== 'object' || cause === null) return undefined;
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errorCodeOf((cause as { cause?: unknown }).cause);
}

/**
 * Hands a request to another replica's private listener
 * (`POST /private/v1/agents/{device}/rpc/{method}`) with a fresh private
 * token, and classifies the outcome so the router retries only what
 * certainly never reached the agent.
 */
export class Forwarder {
  #warnedNoKey = false;

  constructor(private readonly options: ForwarderOptions) {}

  /** Never rejects except with `signal`'s reason. */
  async forward(
    target: Candidate,
    deviceId: string,
    method: string,
    params: Record<string, unknown>,
    deadlineMs: number,
    signal: AbortSignal,
  ): Promise<Delivery> {
    const { key, logger } = this.options;
    if (!key) {
      if (!this.#warnedNoKey) logger.warn('agents connected to other replicas are unreachable: --private-secret is not set');
      this.#warnedNoKey = true;
      return { kind: 'not_delivered', reason: 'this replica has no private secret' };
    }
    const token = await signPrivateToken(key, this.options.replicaId, { deviceId, method, deadlineMs });
    const url = new URL(paths.privateAgentRpc(deviceId, method), target.privateUrl);
    const timeout = AbortSignal.timeout(deadlineMs + this.options.graceMs);
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { [HEADERS.authorization]: bearerAuthorization(token), [HEADERS.contentType]: MEDIA.json },
        body: JSON.stringify(params),
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const code = errorCodeOf(err);
      if (code && NOT_CONNECTED.has(code)) {
        logger.info({ replica: target.id, url: target.privateUrl, code }, 'replica unreachable; trying another');
        return { kind: 'not_delivered', reason: `replica ${target.id} is unreachable (${code})` };
      }
      logger.warn({ err, replica: target.id }, 'forwarded request failed mid-way');
      return { kind: 'lost', reason: timeout.aborted ? `replica ${target.id} did not answer in time` : `the connection to replica ${target.id} failed` };
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      logger.warn({ err, replica: target.id, status: res.status }, 'unreadable answer from a replica');
      return { kind: 'lost', reason: `replica ${target.id} sent an unreadable answer` };
    }
    if (res.status === 200 && typeof body === 'object' && body !== null && 'result' in body) {
      return { kind: 'result', value: (body as { result: unknown }).result };
    }
    const error = (body as { error?: { code?: unknown; message?: unknown; details?: { code?: unknown; message?: unknown } } } | null)?.error;
    const code = error?.code;
    if (code === 'agent_error') {
      const d = error?.details;
      return {
        kind: 'agent_error',
        code: typeof d?.code === 'string' ? d.code : 'internal',
        message: typeof d?.message === 'string' ? d.message : String(error?.message ?? ''),
      };
    }
    if (isErrorCode(code) && REFUSED.has(code)) {
      const level = code === 'unauthorized' || code === 'forbidden' ? 'error' : 'debug';
      logger[level]({ replica: target.id, status: res.status, code }, 'replica did not deliver the request');
      const reason = `replica ${target.id}: ${String(error?.message ?? code)}`;
      return code === 'too_many_requests' ? { kind: 'not_delivered', reason, busy: true } : { kind: 'not_delivered', reason };
    }
    logger.warn({ replica: target.id, status: res.status, code }, 'replica failed the request');
    return { kind: 'lost', reason: `replica ${target.id} answered ${res.status}` };
  }
}
