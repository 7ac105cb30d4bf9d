import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, AGENT_EXAMPLES, AGENT_FLAGS, AgentOptionsError, agentHelp, parseAgentOptions } from '../../src/agent/index.js';

const base = ['--state-dir', '/tmp/x'];

describe('agent flags and environment', () => {
  it('has the documented defaults', () => {
    const o = parseAgentOptions(base, {});
    expect(o).toMatchObject({
      server: undefined,
      org: undefined,
      registrationKey: undefined,
      stateDir: '/tmp/x',
      caFile: undefined,
      dataplane: 'render',
      interfaceName: AGENT_DEFAULTS.interfaceName,
      listenPort: 51820,
      endpoints: [],
      advertiseRoutes: [],
      localPort: 0,
      stun: true,
      stunServer: undefined,
      stunPort: 3478,
      stunAltPort: 3479,
      stunIntervalMs: 60_000,
      resyncIntervalMs: 300_000,
      statusIntervalMs: 30_000,
      cleanupOnExit: false,
      logLevel: 'info',
    });
    expect(o.hostname.length).toBeGreaterThan(0);
  });

  it('reads every flag, in both --flag value and --flag=value forms', () => {
    const o = parseAgentOptions(
      [
        '--server=http://fleet.example:8080/',
        '--org', 'org-1',
        '--registration-key', 'fpr_x',
        '--state-dir=/var/lib/fp',
        '--ca-file', '/etc/fleetplane/ca.pem',
        '--dataplane', 'linux',
        '--interface', 'wg-a',
        '--hostname', 'box-1',
        '--listen-port', '51900',
        '--endpoint', '192.0.2.1:51900',
        '--endpoint=[2001:db8::1]:51900',
        '--advertise-routes', '10.20.0.0/16,FD00:20::/48',
        '--advertise-routes=192.168.5.0/24',
        '--local-port', '9000',
        '--stun=false',
        '--stun-server', 'stun.example.net',
        '--stun-port', '4478',
        '--stun-alt-port=4479',
        '--stun-interval', '20',
        '--relay=false',
        '--resync-interval', '0.5',
        '--status-interval=2',
        '--cleanup-on-exit',
        '--log-level', 'debug',
      ],
      {},
    );
    expect(o).toEqual({
      server: 'http://fleet.example:8080',
      org: 'org-1',
      registrationKey: 'fpr_x',
      stateDir: '/var/lib/fp',
      caFile: '/etc/fleetplane/ca.pem',
      dataplane: 'linux',
      interfaceName: 'wg-a',
      hostname: 'box-1',
      listenPort: 51900,
      endpoints: ['192.0.2.1:51900', '[2001:db8::1]:51900'],
      advertiseRoutes: ['10.20.0.0/16', 'fd00:20::/48', '192.168.5.0/24'],
      localPort: 9000,
      stun: false,
      stunServer: 'stun.example.net',
      stunPort: 4478,
      stunAltPort: 4479,
      stunIntervalMs: 20_000,
      relay: false,
      resyncIntervalMs: 500,
      statusIntervalMs: 2000,
      cleanupOnExit: true,
      logLevel: 'debug',
    });
  });

  it('takes durations with units', () => {
    expect(parseAgentOptions([...base, '--resync-interval', '5m', '--status-interval=1m30s', '--stun-interval', '500ms'], {})).toMatchObject({
      resyncIntervalMs: 300_000,
      statusIntervalMs: 90_000,
      stunIntervalMs: 500,
    });
    expect(parseAgentOptions(base, { FLEETPLANE_AGENT_RESYNC_INTERVAL: '1h' }).resyncIntervalMs).toBe(3_600_000);
  });

  it('reads FLEETPLANE_AGENT_* variables, and flags win over them', () => {
    const env = {
      FLEETPLANE_AGENT_SERVER: 'https://env.example',
      FLEETPLANE_AGENT_ORG: 'org-env',
      FLEETPLANE_AGENT_STATE_DIR: '/env/state',
      FLEETPLANE_AGENT_ENDPOINT: '192.0.2.7:1, 192.0.2.8:2',
      FLEETPLANE_AGENT_CLEANUP_ON_EXIT: 'true',
      FLEETPLANE_AGENT_LISTEN_PORT: '4000',
      FLEETPLANE_AGENT_DATAPLANE: 'linux',
      FLEETPLANE_AGENT_CA_FILE: '/env/ca.pem',
    };
    expect(parseAgentOptions([], { ...env, FLEETPLANE_AGENT_STUN: 'off', FLEETPLANE_AGENT_STUN_SERVER: '192.0.2.50' })).toMatchObject({ stun: false, stunServer: '192.0.2.50' });
    const fromEnv = parseAgentOptions([], env);
    expect(fromEnv).toMatchObject({
      server: 'https://env.example',
      org: 'org-env',
      stateDir: '/env/state',
      endpoints: ['192.0.2.7:1', '192.0.2.8:2'],
      cleanupOnExit: true,
      listenPort: 4000,
      dataplane: 'linux',
      caFile: '/env/ca.pem',
    });
    const flagsWin = parseAgentOptions(['--org', 'org-flag', '--endpoint', '192.0.2.9:3', '--cleanup-on-exit=false', '--dataplane', 'render', '--ca-file=/flag/ca.pem'], env);
    expect(flagsWin).toMatchObject({ org: 'org-flag', endpoints: ['192.0.2.9:3'], cleanupOnExit: false, dataplane: 'render', stateDir: '/env/state', caFile: '/flag/ca.pem' });
  });

  it.each([
    [[], /state-dir/],
    [[...base, '--bogus'], /unknown flag --bogus$/],
    [[...base, '--stat-dir', '/x'], /unknown flag --stat-dir \(did you mean --state-dir\?\)/],
    [[...base, '--status-interval', '8d'], /--status-interval: expected a duration above 0 and at most 7d/],
    [[...base, '--status-interval', 'soon'], /--status-interval: expected a duration/],
    [[...base, 'positional'], /unexpected argument/],
    [[...base, '--org'], /--org needs a value/],
    [[...base, '--ca-file'], /--ca-file needs a value/],
    [[...base, '--dataplane', 'ebpf'], /--dataplane: expected one of render, linux/],
    [[...base, '--listen-port', '0'], /--listen-port/],
    [[...base, '--listen-port', '70000'], /--listen-port/],
    [[...base, '--local-port', 'x'], /--local-port/],
    [[...base, '--endpoint', 'example.com:80'], /--endpoint: expected ADDR:PORT/],
    [[...base, '--endpoint', '192.0.2.1'], /--endpoint/],
    [[...base, '--interface', 'a-name-that-is-far-too-long'], /--interface/],
    [[...base, '--resync-interval', '0'], /--resync-interval/],
    [[...base, '--status-interval', 'soon'], /--status-interval/],
    [[...base, '--server', 'ftp://x'], /--server/],
    [[...base, '--log-level', 'loud'], /--log-level/],
    [[...base, '--cleanup-on-exit=maybe'], /--cleanup-on-exit/],
    [[...base, '--stun-server', 'stun://x:3478'], /--stun-server: expected an IPv4 address or a host name/],
    [[...base, '--stun-server', '192.0.2.1:3478'], /--stun-server/],
    [[...base, '--stun-alt-port', '3478'], /--stun-alt-port must differ from --stun-port/],
    [[...base, '--stun-port', '0'], /--stun-port/],
    [[...base, '--stun-interval', '0'], /--stun-interval/],
    [[...base, '--stun=sometimes'], /--stun/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseAgentOptions(argv, {})).toThrow(AgentOptionsError);
    expect(() => parseAgentOptions(argv, {})).toThrow(message);
  });

  it('takes --advertise-routes as comma-separated CIDRs, from the environment too; empty requests none', () => {
    expect(parseAgentOptions(base, { FLEETPLANE_AGENT_ADVERTISE_ROUTES: '10.20.0.0/16, 192.168.5.0/24,10.20.0.0/16' }).advertiseRoutes).toEqual(['10.20.0.0/16', '192.168.5.0/24']);
    expect(parseAgentOptions([...base, '--advertise-routes', '10.30.0.0/24'], { FLEETPLANE_AGENT_ADVERTISE_ROUTES: '10.20.0.0/16' }).advertiseRoutes).toEqual(['10.30.0.0/24']);
    expect(parseAgentOptions([...base, '--advertise-routes='], { FLEETPLANE_AGENT_ADVERTISE_ROUTES: '10.20.0.0/16' }).advertiseRoutes).toEqual([]);
    expect(parseAgentOptions(base, { FLEETPLANE_AGENT_ADVERTISE_ROUTES: '' }).advertiseRoutes).toEqual([]);
  });

  it.each([
    ['10.20.0.1/16', '--advertise-routes: 10.20.0.1/16 has host bits set; expected 10.20.0.0/16'],
    ['fd00:20::1/48', '--advertise-routes: fd00:20::1/48 has host bits set; expected fd00:20::/48'],
    ['10.20.0.0', '--advertise-routes: "10.20.0.0" is not a CIDR (e.g. 10.20.0.0/16)'],
    ['10.20.0.0/16,lan', '--advertise-routes: "lan" is not a CIDR (e.g. 10.20.0.0/16)'],
    ['0.0.0.0/0', '--advertise-routes: 0.0.0.0/0 is a default route; exit nodes are not supported'],
  ])('refuses --advertise-routes %s, saying what it should be', (value, message) => {
    expect(() => parseAgentOptions([...base, '--advertise-routes', value], {})).toThrow(new AgentOptionsError(message));
  });

  it('rejects a bad environment value, naming the variable', () => {
    expect(() => parseAgentOptions(base, { FLEETPLANE_AGENT_CLEANUP_ON_EXIT: 'sometimes' })).toThrow(/FLEETPLANE_AGENT_CLEANUP_ON_EXIT/);
  });

  it('--help shows examples, and every example parses as written', () => {
    const help = agentHelp();
    expect(help).toContain('Examples:');
    expect(AGENT_EXAMPLES.length).toBeGreaterThanOrEqual(3);
    for (const e of AGENT_EXAMPLES) {
      expect(help).toContain(`fleetplane agent ${e.args.join(' ')}`);
      expect(() => parseAgentOptions(e.args, {}), e.args.join(' ')).not.toThrow();
    }
    expect(parseAgentOptions(AGENT_EXAMPLES[3]?.args ?? [], {}).stunIntervalMs).toBe(300_000);
  });

  it('--help says the local API takes a free port by default and where the agent writes it', () => {
    const line = agentHelp().split('\n').find((l) => l.includes('--local-port'));
    expect(line).toContain('(default 0: a free one, so agents with different state directories never collide)');
    expect(line).toContain('127.0.0.1:PORT is in <state-dir>/local-api.address while the agent runs');
  });

  it('documents every flag and its variable in --help', () => {
    const help = agentHelp();
    for (const spec of Object.values(AGENT_FLAGS)) {
      expect(help).toContain(`--${spec.flag}`);
      expect(help).toContain(spec.env);
      expect(spec.env.startsWith('FLEETPLANE_AGENT_')).toBe(true);
    }
  });
});
