import type { Device } from '../../../client/index.js';
import { orgLabel, type CtlContext } from '../context.js';
import { resolveId } from '../names.js';

/** One listing per command: naming a device and naming its peers read the same list. */
const listed = new WeakMap<CtlContext, Promise<Device[]>>();

/** The devices of the command's organization, listed once per command. */
export function orgDevices(ctx: CtlContext): Promise<Device[]> {
  let devices = listed.get(ctx);
  if (devices === undefined) {
    devices = ctx.org().then(async (org) => (await ctx.client.devices.list(org.id, { signal: ctx.signal })).items);
    listed.set(ctx, devices);
  }
  return devices;
}

/** The id of the device `ref` names in the command's organization: an id, a hostname or a tunnel IP. */
export async function resolveDevice(ctx: CtlContext, ref: string): Promise<string> {
  const org = await ctx.org();
  return resolveId(ref, () => orgDevices(ctx), (d) => [d.hostname, d.tunnel_ip], 'device', ` in organization ${orgLabel(org)}`);
}
