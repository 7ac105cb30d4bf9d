import { Type, type Static } from '@sinclair/typebox';
import { AGENT_METHOD_PATTERN, RPC_WAIT_MAX_S } from '../tunnel.js';
import { Uuid, strict } from './common.js';

/** Path parameters of `POST .../devices/{id}/rpc/{method}`. */
export const DeviceRpcParams = Type.Object({ org: Uuid, id: Uuid, method: Type.String({ pattern: AGENT_METHOD_PATTERN }) }, strict);

/** `?wait=<seconds>`: how long to wait for the device to connect (default RPC_WAIT_DEFAULT_S). */
export const DeviceRpcQuery = Type.Object({ wait: Type.Optional(Type.Number({ minimum: 0, maximum: RPC_WAIT_MAX_S })) }, strict);

/** Path parameters of the private `POST /private/v1/agents/{id}/rpc/{method}`. */
export const PrivateRpcParams = Type.Object({ id: Uuid, method: Type.String({ pattern: AGENT_METHOD_PATTERN }) }, strict);

export type DeviceRpcParams = Static<typeof DeviceRpcParams>;
export type DeviceRpcQuery = Static<typeof DeviceRpcQuery>;
