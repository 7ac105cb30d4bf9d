/**
 * The renderers under fuzzing (issue 36): every rendered field is fed
 * newlines, quotes, NUL, huge numbers, non-integers and nft/ini syntax. A
 * renderer either refuses (RenderValueError) or writes a file that parses
 * (`wg-quick strip` + `wg setconf`, `nft -c -f`, and a load next to another
 * table) and holds nothing but the given peers and the agent's own table.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderNftables, renderWireGuard, RenderValueError, assertOwnTableOnly, type DesiredDataplane } from '../../../src/agent/dataplane/index.js';
import { nftablesProblems, toolsUsable, ToolBench, wireGuardProblems } from './config-checks.js';
import { hostileDesired, validDesired, withField } from './render-arbitraries.js';
import { fullScenario } from './scenarios.js';

const nftUsable = toolsUsable('nft -c -f / nft -f in a network namespace', ['ip', 'nft']);
const wgUsable = toolsUsable('wg-quick strip | wg setconf on a wireguard-go interface', ['ip', 'wg', 'wg-quick', 'wireguard-go']);
const bench = new ToolBench(process.pid.toString(36));
/** Each run that renders starts the tools a few times: enough runs to find a way through, few enough for 2 cores. */
const RUNS = 40;

beforeAll(async () => {
  if (nftUsable || wgUsable) await bench.start(wgUsable);
}, 30_000);
afterAll(async () => {
  if (nftUsable || wgUsable) await bench.stop();
});

/** The rendering, or the RenderValueError it refused with (anything else fails the test). */
function attempt(render: (d: DesiredDataplane) => string, desired: DesiredDataplane): string | RenderValueError {
  try {
    return render(desired);
  } catch (err) {
    if (err instanceof RenderValueError) return err;
    throw err;
  }
}

async function checkWireGuard(text: string, desired: DesiredDataplane): Promise<void> {
  expect(wireGuardProblems(text, desired)).toEqual([]);
  if (wgUsable) expect(await bench.wireGuardProblems(text)).toEqual([]);
}

async function checkNftables(text: string): Promise<void> {
  expect(nftablesProblems(text)).toEqual([]);
  expect(() => assertOwnTableOnly(text)).not.toThrow();
  if (nftUsable) expect(await bench.nftProblems(text)).toEqual([]);
}

describe('renderers under fuzzing', () => {
  it('valid desired states render files that parse and hold only the given peers and the own table', async () => {
    await fc.assert(
      // The two files go to different tools (an interface, a namespace): checked at once, the waits on the kernel overlap.
      fc.asyncProperty(validDesired, async (desired) => {
        await Promise.all([checkWireGuard(renderWireGuard(desired), desired), checkNftables(renderNftables(desired))]);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it('a hostile value in any rendered field is refused, or cannot add a line, a key, a peer or a statement', async () => {
    await fc.assert(
      fc.asyncProperty(hostileDesired, async ({ desired }) => {
        const wireguard = attempt(renderWireGuard, desired);
        const nftables = attempt(renderNftables, desired);
        await Promise.all([typeof wireguard === 'string' && checkWireGuard(wireguard, desired), typeof nftables === 'string' && checkNftables(nftables)]);
      }),
      { numRuns: RUNS * 2 },
    );
  }, 180_000);

  // The four fields of the finding, each with the injection it allowed.
  const full = fullScenario();
  const firstRule = full.firewall.mode === 'filter' ? full.firewall.inbound.findIndex((r) => r.ports !== null) : -1;
  const cases: [string, (string | number)[], unknown][] = [
    ["a peer's id, into a comment of wireguard.conf", ['peers', 0, 'device_id'], `${full.peers[0]?.device_id}\nPostUp = touch /tmp/pwned`],
    ['network.mtu, into MTU =', ['interface', 'mtu'], '1420\nPostUp = touch /tmp/pwned'],
    ['a security group id, into the nftables header', ['firewall', 'security_group_id'], 'x\nflush ruleset'],
    ['a port of 70000, into dport', ['firewall', 'inbound', firstRule, 'ports', 'to'], 70000],
    ['a port of 1.5, into dport', ['firewall', 'inbound', firstRule, 'ports', 'from'], 1.5],
    ['a port that is a string, into dport', ['firewall', 'inbound', firstRule, 'ports', 'to'], '22 accept\n}\n}\nflush ruleset\n'],
  ];
  it.each(cases)('refuses %s', (_name, path, value) => {
    const desired = withField(full, path, value);
    const touchesNft = path[0] === 'firewall';
    const render = touchesNft ? renderNftables : renderWireGuard;
    expect(() => render(desired)).toThrow(RenderValueError);
    // The other file doesn't hold the field: it still renders.
    expect(typeof (touchesNft ? renderWireGuard : renderNftables)(desired)).toBe('string');
  });

  it('keeps a hostname with line breaks and ini syntax to one comment line', async () => {
    const desired = withField(fullScenario(), ['peers', 1, 'hostname'], 'h\n[Peer]\nPublicKey = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\nPostUp = touch /tmp/pwned\0');
    const text = renderWireGuard(desired);
    await checkWireGuard(text, desired);
    expect(text).toContain('# h__Peer__PublicKey___AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA___PostUp___touch__tmp_pwned_ (');
  });
});
