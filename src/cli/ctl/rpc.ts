import { RPC_WAIT_MAX_S } from '../../protocol/index.js';
import { intFlag, jsonObjectFlag, requireArg } from './args.js';
import { orgOf, type CtlContext } from './context.js';
import { UsageError } from './usage.js';

/** `devices rpc <id> <method> [--params JSON] [--wait S]`: prints the agent's result as JSON. */
export async function runRpc(ctx: CtlContext, rest: string[]): Promise<void> {
  const org = orgOf(ctx);
  const id = requireArg(rest[0], 'device id');
  const method = requireArg(rest[1], 'agent method (e.g. ping, status, force-sync)');
  const v = ctx.args.values;
  const params = v.params === undefined ? {} : jsonObjectFlag('params', v.params);
  const wait = intFlag('wait', v.wait);
  if (wait !== undefined && wait > RPC_WAIT_MAX_S) throw new UsageError(`--wait can be at most ${RPC_WAIT_MAX_S} seconds`);
  const result = await ctx.client.devices.rpc(org, id, method, params, { wait, signal: ctx.signal });
  ctx.out.line(ctx.out.mode === 'json' ? JSON.stringify(result) : JSON.stringify(result, null, 2));
}
