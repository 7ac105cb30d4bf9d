/**
 * The chains of table `inet fleetplane` for traffic this machine forwards
 * out of its tunnel (render-nftables.ts renders the rest of the table, from
 * the same typed tokens):
 * - the relay device forwards between its WireGuard peers;
 * - a subnet router (`subnet_routes`) forwards from the tunnel to its
 *   routes and masquerades that traffic, so hosts there need no route back
 *   to the tunnel pool (Tailscale's `--snat-subnet-routes`, its default).
 * Nothing else that arrives on the tunnel is forwarded: a peer must not
 * reach this machine's other networks through it.
 */
import type { DesiredDataplane } from './desired-state.js';
import { formatInterval, mergeIntervals, rangeToInterval, type IpInterval } from './addresses.js';
import { addressRange, cidr, joined, line, phrase, type Line, type Token } from './rendered-text.js';

/**
 * The routes of one family as set elements: each checked to be a CIDR
 * (RenderValueError otherwise), then merged, since nftables refuses
 * overlapping elements in one set.
 */
function destinations(routes: readonly string[], family: 4 | 6): Token | undefined {
  const intervals: IpInterval[] = [];
  for (const route of routes) {
    const checked = cidr(route, 'subnet route');
    const interval = rangeToInterval(checked);
    if (interval?.family === family) intervals.push(interval);
  }
  const tokens = mergeIntervals(intervals).map((iv) => addressRange(formatInterval(iv), 'subnet route'));
  if (tokens.length === 0) return undefined;
  return tokens.length === 1 && tokens[0] !== undefined ? tokens[0] : phrase`{ ${joined(tokens, ', ')} }`;
}

/** `ip daddr …` / `ip6 daddr …` for each family that has routes. */
function toRoutes(routes: readonly string[]): Token[] {
  const out: Token[] = [];
  const v4 = destinations(routes, 4);
  const v6 = destinations(routes, 6);
  if (v4 !== undefined) out.push(phrase`ip daddr ${v4}`);
  if (v6 !== undefined) out.push(phrase`ip6 daddr ${v6}`);
  return out;
}

/**
 * The `forward` chain (filter), when this device is the relay device or
 * serves routes, and the `postrouting` chain (nat) that masquerades what it
 * forwards to its routes. `iface` is the quoted tunnel interface name.
 * Empty when the device forwards nothing. Throws RenderValueError when a
 * value is not of its type.
 */
export function renderRoutingChains(desired: DesiredDataplane, iface: Token): Line[] {
  const routes = toRoutes(desired.subnet_routes);
  if (desired.forwarding !== true && routes.length === 0) return [];
  const lines: Line[] = [
    line``,
    line`\tchain forward {`,
    line`\t\ttype filter hook forward priority filter; policy accept;`,
    ...(desired.forwarding === true ? [line`\t\tiifname ${iface} oifname ${iface} accept`] : []),
    ...routes.map((to) => line`\t\tiifname ${iface} ${to} accept`),
    line`\t\tiifname ${iface} drop`,
    line`\t}`,
  ];
  if (routes.length > 0) {
    lines.push(
      line``,
      line`\tchain postrouting {`,
      line`\t\ttype nat hook postrouting priority srcnat; policy accept;`,
      ...routes.map((to) => line`\t\tiifname ${iface} ${to} masquerade`),
      line`\t}`,
    );
  }
  return lines;
}
