import { orgLabel, type CtlContext } from '../context.js';
import { resolveId } from '../names.js';

/** The id of the device `ref` names in the command's organization: an id, a hostname or a tunnel IP. */
export async function resolveDevice(ctx: CtlContext, ref: string): Promise<string> {
  const org = await ctx.org();
  const list = async () => (await ctx.client.devices.list(org.id, { signal: ctx.signal })).items;
  return resolveId(ref, list, (d) => [d.hostname, d.tunnel_ip], 'device', ` in organization ${orgLabel(org)}`);
}
