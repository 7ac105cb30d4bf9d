/**
 * Where the agent runs STUN, and against what: setUpStun's decisions, each
 * "off" logged once at info with its reason.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Dataplane } from '../../src/agent/dataplane/index.js';
import { setUpStun, type StunSettings } from '../../src/agent/nat/index.js';

const settings: StunSettings = { stun: true, stunServer: undefined, stunPort: 3478, stunAltPort: 3479, stunIntervalMs: 60_000, listenPort: 51820 };
const dataplane = (mode: Dataplane['mode']): Dataplane => ({
  mode,
  apply: () => Promise.reject(new Error('not used')),
  cleanup: () => Promise.reject(new Error('not used')),
  describe: () => Promise.reject(new Error('not used')),
});

function logged() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) });
  return { logger, lines };
}

describe('setUpStun', () => {
  it.each<[string, Partial<StunSettings>, Dataplane['mode'], string, RegExp]>([
    ['--stun=false', { stun: false }, 'linux', 'http://fleet.example:8080', /--stun=false/],
    ['the render dataplane', {}, 'render', 'http://fleet.example:8080', /--dataplane linux/],
    ['an IPv6 server', {}, 'linux', 'http://[2001:db8::1]:8080', /IPv6.*--stun-server/],
  ])('is off with %s, and says why once at info', (_what, over, mode, server, why) => {
    const { logger, lines } = logged();
    expect(setUpStun({ ...settings, ...over }, server, dataplane(mode), logger, () => undefined)).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe(30);
    expect(lines[0]?.msg).toMatch(why);
  });

  it('runs with the linux dataplane (for an IPv6 server too when --stun-server names an IPv4 host), pending until the first answer', () => {
    const { logger, lines } = logged();
    const d = setUpStun(settings, 'https://fleet.example:8443', dataplane('linux'), logger, () => undefined);
    expect(d).toBeDefined();
    expect(d?.state).toEqual({ kind: 'pending' });
    expect(lines).toEqual([]);
    expect(setUpStun({ ...settings, stunServer: '203.0.113.7' }, 'http://[2001:db8::1]:8080', dataplane('linux'), logger, () => undefined)).toBeDefined();
  });
});
