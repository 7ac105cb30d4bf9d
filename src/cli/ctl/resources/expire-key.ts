import type { RemoteCommand } from '../command-spec.js';
import { noExtraArgs, requireArg } from '../flag-values.js';
import { resolveDevice } from './device-ref.js';

/** `devices expire <device>`: expires the device's key (every token it holds is revoked; it must enroll again). */
export const expireKeyCommand: RemoteCommand = {
  kind: 'remote',
  name: 'expire',
  args: '<device>',
  summary: "expire a device's key: its tokens are revoked, its agent loses access and must enroll again; the device stays",
  details: [
    '<device>: its hostname, tunnel IP or id. Every valid token of the device is revoked: it stops',
    'authenticating at once, its watch streams and tunnel end, and its agent exits saying its token was',
    'revoked. The device stays listed (offline) until its agent enrolls again with a registration key, or',
    'until you delete it. Admins only (as Headscale\'s nodes expire and Tailscale\'s "expire key").',
  ].join('\n'),
  flags: ['org'],
  examples: ['fleetplane ctl devices expire laptop-7 --org acme'],
  async run(ctx, args) {
    noExtraArgs(args, 1);
    const ref = requireArg(args[0], '<device>');
    const org = (await ctx.org()).id;
    const id = await resolveDevice(ctx, ref);
    await ctx.client.devices.expireKey(org, id, { signal: ctx.signal });
    ctx.out.line(`expired the key of device ${ref} (${id}): its agent must enroll again`);
  },
};
