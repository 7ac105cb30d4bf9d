import { AGENT_METHOD_PATTERN } from '../../protocol/index.js';
import type { Check } from '../received/index.js';

/** What a method handler learns about the request it serves. */
export interface AgentCallContext {
  /** Aborts at the request's deadline, or when the tunnel client stops. */
  readonly signal: AbortSignal;
  /** The deadline, in this machine's clock (ms since the epoch). */
  readonly deadline: number;
  readonly method: string;
  /** The request id of the frame (for logs). */
  readonly id: string;
}

/**
 * Serves one agent method. Resolves with the result (any JSON value;
 * `undefined` is sent as `null`) or rejects: an `AgentMethodError` is sent
 * with its code, anything else as `internal` with its message. A handler
 * should stop its work when `ctx.signal` aborts; the answer is sent at the
 * deadline whether or not it has.
 */
export type AgentMethodHandler = (params: Record<string, unknown>, ctx: AgentCallContext) => Promise<unknown>;

/** A failure a handler reports to the caller with a code of its choosing (snake_case). */
export class AgentMethodError extends Error {
  override readonly name = 'AgentMethodError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const METHOD = new RegExp(AGENT_METHOD_PATTERN);

/** A registered method: its handler, and the check of its params (none: any object). */
export interface AgentMethod {
  handler: AgentMethodHandler;
  params: Check<Record<string, unknown>> | undefined;
}

/**
 * The one place agent methods are registered (`ping` by the tunnel client,
 * `status` and `force-sync` by the agent daemon, more by modules). Names
 * follow AGENT_METHOD_PATTERN; each may be registered once at a time.
 */
export class AgentMethodRegistry {
  readonly #handlers = new Map<string, AgentMethod>();

  /**
   * Registers `handler`; returns a function that unregisters it. Throws on a
   * bad or taken name. With `params`, a request whose params fail it is
   * answered `validation_failed` and the handler doesn't run (see
   * received/ for compiled checks of the protocol's schemas).
   */
  register(method: string, handler: AgentMethodHandler, params?: Check<Record<string, unknown>>): () => void {
    if (!METHOD.test(method)) throw new TypeError(`invalid agent method name "${method}" (expected ${AGENT_METHOD_PATTERN})`);
    if (this.#handlers.has(method)) throw new Error(`agent method "${method}" is already registered`);
    const entry: AgentMethod = { handler, params };
    this.#handlers.set(method, entry);
    return () => {
      if (this.#handlers.get(method) === entry) this.#handlers.delete(method);
    };
  }

  get(method: string): AgentMethod | undefined {
    return this.#handlers.get(method);
  }

  has(method: string): boolean {
    return this.#handlers.has(method);
  }

  /** Registered method names, sorted. */
  methods(): string[] {
    return [...this.#handlers.keys()].sort();
  }
}
