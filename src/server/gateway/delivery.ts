import { ApiError } from '../errors.js';

/**
 * How handing a request to an agent ended.
 * - `result` / `agent_error`: the agent answered.
 * - `not_delivered`: the agent certainly never started it (no tunnel, a
 *   drained tunnel, a replica that refused or couldn't be reached), so it
 *   may be tried elsewhere without running twice. `busy`: the tunnels there
 *   had as many pending requests as allowed.
 * - `lost`: it may or may not have run (the tunnel or the replica went away
 *   mid-request); it is never retried.
 */
export type Delivery =
  | { readonly kind: 'result'; readonly value: unknown }
  | { readonly kind: 'agent_error'; readonly code: string; readonly message: string }
  | { readonly kind: 'not_delivered'; readonly reason: string; readonly busy?: boolean }
  | { readonly kind: 'lost'; readonly reason: string };

/** The caller's answer to a final delivery: the agent's result; throws the ApiError otherwise. */
export function resultOf(d: Delivery): unknown {
  switch (d.kind) {
    case 'result':
      return d.value;
    case 'agent_error':
      throw agentError(d.code, d.message);
    case 'not_delivered':
      if (d.busy) throw new ApiError('too_many_requests', d.reason);
      throw new ApiError('agent_not_connected', `the agent is not connected (${d.reason})`);
    case 'lost':
      throw new ApiError('unavailable', `${d.reason}; the agent may or may not have run the request`);
  }
}

/** 502 `agent_error`; `details` carries the agent's own code and message. */
export function agentError(code: string, message: string): ApiError {
  return new ApiError('agent_error', message, { code, message });
}
