import { Type, type Static } from '@sinclair/typebox';
import { AGENT_METHOD_PATTERN, MAX_AGENT_DEADLINE_MS, RPC_WAIT_MAX_S } from '../tunnel.js';
import { Uuid, strict } from './common.js';

/** Path parameters of `POST .../devices/{id}/rpc/{method}`. */
export const DeviceRpcParams = Type.Object({ org: Uuid, id: Uuid, method: Type.String({ pattern: AGENT_METHOD_PATTERN }) }, strict);

/** `?wait=<seconds>`: how long to wait for the device to connect (default RPC_WAIT_DEFAULT_S). */
export const DeviceRpcQuery = Type.Object({ wait: Type.Optional(Type.Number({ minimum: 0, maximum: RPC_WAIT_MAX_S })) }, strict);

/** Path parameters of the private `POST /private/v1/agents/{id}/rpc/{method}`. */
export const PrivateRpcParams = Type.Object({ id: Uuid, method: Type.String({ pattern: AGENT_METHOD_PATTERN }) }, strict);

/**
 * A request frame as an agent accepts it (docs/protocol.md "Agent tunnel
 * and requests to agents"): any other is answered `validation_failed`.
 */
export const AgentRequestFrame = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256 }),
    method: Type.String({ pattern: AGENT_METHOD_PATTERN }),
    params: Type.Record(Type.String(), Type.Unknown()),
    deadline_ms: Type.Integer({ minimum: 1, maximum: MAX_AGENT_DEADLINE_MS }),
  },
  { $id: 'AgentRequestFrame' },
);

/** The params of `ping`, `status` and `force-sync`: none. An agent answers `validation_failed` to a request that sends some. */
export const NoAgentParams = Type.Object({}, { ...strict, $id: 'NoAgentParams' });

export type DeviceRpcParams = Static<typeof DeviceRpcParams>;
export type DeviceRpcQuery = Static<typeof DeviceRpcQuery>;
export type AgentRequestFrame = Static<typeof AgentRequestFrame>;
