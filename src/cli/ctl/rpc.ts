import { RPC_WAIT_MAX_S } from '../../protocol/wire.js';
import { UsageError } from '../exit-codes.js';
import type { RemoteCommand } from './command-spec.js';
import { optionalDuration } from './duration.js';
import { jsonObjectFlag, noExtraArgs, requireArg } from './flag-values.js';
import { resolveDevice } from './resources/device-ref.js';

/** `devices rpc <device> <method> [--params JSON] [--wait S]`: prints the agent's result as JSON. */
export const rpcCommand: RemoteCommand = {
  kind: 'remote',
  name: 'rpc',
  args: '<device> <method>',
  summary: "call a method of a device's agent through the server and print its result",
  details: [
    '<device>: its hostname, tunnel IP or id. <method>: ping, status, force-sync, or one of the agent\'s own.',
    'The result is printed as JSON (one line with -o json). An agent error or a device that did not',
    'connect in time is exit 1.',
  ].join('\n'),
  flags: ['org', 'params', 'wait', 'output'],
  examples: ['fleetplane ctl devices rpc web-1 ping --org acme', 'fleetplane ctl devices rpc web-1 force-sync --org acme --wait 60'],
  async run(ctx, args) {
    noExtraArgs(args, 2);
    const ref = requireArg(args[0], '<device>');
    const method = requireArg(args[1], '<method> (e.g. ping, status, force-sync)');
    const paramsText = ctx.flags.string('params');
    const params = paramsText === undefined ? {} : jsonObjectFlag('params', paramsText);
    const wait = optionalDuration('wait', ctx.flags.string('wait'));
    if (wait !== undefined && wait > RPC_WAIT_MAX_S) throw new UsageError(`--wait can be at most ${RPC_WAIT_MAX_S} seconds`);
    const org = await ctx.org();
    const id = await resolveDevice(ctx, ref);
    const result = await ctx.client.devices.rpc(org.id, id, method, params, { wait, signal: ctx.signal });
    if (ctx.out.forPeople) ctx.out.line(JSON.stringify(result, null, 2));
    else if (ctx.out.mode === 'json') ctx.out.line(JSON.stringify(result));
    else ctx.out.document(result);
  },
};
