import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { AGENT_ERROR_CODES, type ErrorCode, type TunnelRequest, type TunnelResponse } from '../../protocol/index.js';
import { checkRequestFrame, shownText } from '../received/index.js';
import { AgentMethodError, type AgentMethodRegistry } from './method-registry.js';

/** The answer to a request frame or params that fail their schema. */
const INVALID: ErrorCode = 'validation_failed';

class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
}

class AgentStopping extends Error {
  override readonly name = 'AgentStopping';
}

export interface RunnerLimits {
  /** Handlers running at once. */
  maxConcurrent: number;
  /** Requests waiting for a free slot; one more is answered `too_many_requests` at once. */
  maxQueued: number;
}

/**
 * Runs request frames against the method registry, for every connection of
 * one tunnel client. At most `maxConcurrent` handlers run at once; up to
 * `maxQueued` more wait in arrival order, and beyond that a request is
 * answered at once with `too_many_requests`. Each request's signal aborts at
 * its deadline (counted from receipt, queueing included) and when `stop` is
 * called; its answer goes out then, whether or not the handler has settled.
 */
export class RequestRunner {
  #running = 0;
  readonly #queue: (() => void)[] = [];
  readonly #stopping = new AbortController();

  constructor(
    private readonly registry: AgentMethodRegistry,
    private readonly limits: RunnerLimits,
    private readonly logger: Logger,
  ) {
    // One abort listener per running or queued request, bounded by the limits.
    setMaxListeners(limits.maxConcurrent + limits.maxQueued + 10, this.#stopping.signal);
  }

  /** Handlers that have not settled yet. */
  get running(): number {
    return this.#running;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Cancels every running and queued request (their answers become `unavailable`). Idempotent. */
  stop(): void {
    this.#stopping.abort(new AgentStopping('the agent is stopping'));
  }

  /**
   * Serves one request; always resolves with the frame to send. A frame that
   * fails AgentRequestFrame, or params that fail the method's check, are
   * answered `validation_failed` without running anything.
   */
  async run(req: TunnelRequest): Promise<TunnelResponse> {
    const frame = checkRequestFrame(req);
    if (!frame.ok) return this.invalid(req, `the request frame ${frame.problem}`);
    const method = this.registry.get(req.method);
    if (!method) {
      return { id: req.id, error: { code: AGENT_ERROR_CODES.notFound, message: `this agent has no method "${req.method}"` } };
    }
    const params = method.params?.(req.params);
    if (params?.ok === false) return this.invalid(req, `the params of ${req.method}: ${params.problem}`);
    const { handler } = method;
    if (this.#stopping.signal.aborted) return this.failure(req, this.#stopping.signal.reason);
    if (this.#running >= this.limits.maxConcurrent && this.#queue.length >= this.limits.maxQueued) {
      return {
        id: req.id,
        error: {
          code: AGENT_ERROR_CODES.tooManyRequests,
          message: `the agent runs ${this.limits.maxConcurrent} requests at once and queues ${this.limits.maxQueued}`,
        },
      };
    }
    const deadline = Date.now() + req.deadline_ms;
    const cancel = new AbortController();
    const { signal } = cancel;
    const timer = setTimeout(() => cancel.abort(new DeadlineExceeded(`no answer within ${req.deadline_ms} ms`)), req.deadline_ms);
    // Not AbortSignal.any: listeners on the long-lived stop signal must go away with the request.
    const onStop = (): void => cancel.abort(this.#stopping.signal.reason);
    this.#stopping.signal.addEventListener('abort', onStop, { once: true });
    const cleanup = (): void => {
      clearTimeout(timer);
      this.#stopping.signal.removeEventListener('abort', onStop);
    };
    const aborted = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    // Observed through the races below; this only keeps an unraced rejection from counting as unhandled.
    aborted.catch(() => undefined);
    try {
      await Promise.race([this.acquire(signal), aborted]);
    } catch (err) {
      cleanup();
      return this.failure(req, err);
    }
    const work = Promise.resolve()
      .then(() => handler(req.params, { signal, deadline, method: req.method, id: req.id }))
      .finally(() => {
        this.release();
        cleanup();
      });
    try {
      const result = await Promise.race([work, aborted]);
      return { id: req.id, result: result === undefined ? null : result };
    } catch (err) {
      // A handler that ignores its signal still finishes; its late outcome only gets logged.
      if (signal.aborted) {
        work.catch((late: unknown) => this.logger.debug({ err: late, method: req.method }, 'handler failed after its answer was sent'));
      }
      return this.failure(req, signal.aborted ? signal.reason : err);
    }
  }

  /** Takes a slot, waiting in the queue if none is free; a request aborted while queued leaves the queue. */
  private acquire(signal: AbortSignal): Promise<void> {
    if (this.#running < this.limits.maxConcurrent) {
      this.#running++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const entry = (): void => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = (): void => {
        const i = this.#queue.indexOf(entry);
        if (i >= 0) this.#queue.splice(i, 1);
      };
      signal.addEventListener('abort', leave, { once: true });
      this.#queue.push(entry);
    });
  }

  /** Hands the slot to the next queued request, or frees it. */
  private release(): void {
    const next = this.#queue.shift();
    if (next) next();
    else this.#running--;
  }

  private invalid(req: TunnelRequest, message: string): TunnelResponse {
    this.logger.warn({ method: shownText(req.method), request: shownText(req.id), problem: message }, 'refused an invalid agent request');
    return { id: req.id, error: { code: INVALID, message } };
  }

  private failure(req: TunnelRequest, err: unknown): TunnelResponse {
    if (err instanceof DeadlineExceeded) return { id: req.id, error: { code: AGENT_ERROR_CODES.deadlineExceeded, message: err.message } };
    if (err instanceof AgentStopping) return { id: req.id, error: { code: AGENT_ERROR_CODES.unavailable, message: err.message } };
    if (err instanceof AgentMethodError) return { id: req.id, error: { code: err.code, message: err.message } };
    this.logger.warn({ err, method: req.method, request: req.id }, 'agent method failed');
    const message = err instanceof Error ? err.message : String(err);
    return { id: req.id, error: { code: AGENT_ERROR_CODES.internal, message } };
  }
}
