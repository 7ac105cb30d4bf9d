import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, makeSettings, parseSettings, SettingsError, SETTING_SPECS } from '../../src/server/index.js';

function errorOf(fn: () => unknown): SettingsError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

describe('parseSettings', () => {
  it('defaults match the documented ones', () => {
    const s = parseSettings([], {});
    expect(s).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      dataDir: './data',
      memory: false,
      databaseUrl: undefined,
      adminToken: undefined,
      tombstoneRetention: 86_400,
      compactionInterval: 60,
      logLevel: 'info',
      bodyLimit: 1024 * 1024,
    });
  });

  it('reads every setting from its flag and its environment variable', () => {
    const env = {
      FLEETPLANE_HOST: '127.0.0.2',
      FLEETPLANE_PORT: '9000',
      FLEETPLANE_DATA_DIR: '/tmp/x',
      FLEETPLANE_MEMORY: 'true',
      DATABASE_URL: 'postgres://u@h/db',
      FLEETPLANE_ADMIN_TOKEN: 'secret',
      FLEETPLANE_TOMBSTONE_RETENTION: '600',
      FLEETPLANE_LOG_LEVEL: 'warn',
    };
    expect(parseSettings([], env)).toMatchObject({
      host: '127.0.0.2',
      port: 9000,
      dataDir: '/tmp/x',
      memory: true,
      databaseUrl: 'postgres://u@h/db',
      adminToken: 'secret',
      tombstoneRetention: 600,
      logLevel: 'warn',
      bus: 'postgres',
    });
    const flags = parseSettings(
      ['--host', '::1', '--port=0', '--data-dir', 'd', '--memory', '--admin-token', 't', '--tombstone-retention', '30', '--compaction-interval', '2.5', '--log-level=debug'],
      {},
    );
    expect(flags).toMatchObject({
      host: '::1',
      port: 0,
      dataDir: 'd',
      memory: true,
      adminToken: 't',
      tombstoneRetention: 30,
      compactionInterval: 2.5,
      logLevel: 'debug',
    });
  });

  it('reads the TLS certificate and key from flags or the environment (HTTPS needs both)', () => {
    expect(parseSettings(['--tls-cert', 'c.pem', '--tls-key=k.pem'], {})).toMatchObject({ tlsCert: 'c.pem', tlsKey: 'k.pem' });
    expect(parseSettings([], { FLEETPLANE_TLS_CERT: 'ec.pem', FLEETPLANE_TLS_KEY: 'ek.pem' })).toMatchObject({ tlsCert: 'ec.pem', tlsKey: 'ek.pem' });
    expect(parseSettings(['--tls-cert', 'f.pem'], { FLEETPLANE_TLS_CERT: 'ec.pem', FLEETPLANE_TLS_KEY: 'ek.pem' })).toMatchObject({ tlsCert: 'f.pem', tlsKey: 'ek.pem' });
    expect(parseSettings([], {})).toMatchObject({ tlsCert: undefined, tlsKey: undefined });
  });

  it('flags win over the environment', () => {
    const env = { FLEETPLANE_PORT: '1000', FLEETPLANE_LOG_LEVEL: 'error', FLEETPLANE_MEMORY: 'true', DATABASE_URL: 'postgres://env/db' };
    const s = parseSettings(['--port', '2000', '--log-level', 'trace', '--memory=false', '--database-url', 'postgres://flag/db'], env);
    expect(s).toMatchObject({ port: 2000, logLevel: 'trace', memory: false, databaseUrl: 'postgres://flag/db' });
  });

  it('the compaction interval defaults to min(60, retention / 2), from flags or environment', () => {
    expect(parseSettings(['--tombstone-retention', '10'], {}).compactionInterval).toBe(5);
    expect(parseSettings([], { FLEETPLANE_TOMBSTONE_RETENTION: '90' }).compactionInterval).toBe(45);
    expect(parseSettings(['--tombstone-retention', '7200'], {}).compactionInterval).toBe(60);
    expect(parseSettings(['--tombstone-retention', '10', '--compaction-interval', '9'], {}).compactionInterval).toBe(9);
    expect(parseSettings([], { FLEETPLANE_TOMBSTONE_RETENTION: '10', FLEETPLANE_COMPACTION_INTERVAL: '1' }).compactionInterval).toBe(1);
    expect(makeSettings({ tombstoneRetention: 4 }).compactionInterval).toBe(2);
    expect(makeSettings({}).compactionInterval).toBe(DEFAULT_SETTINGS.compactionInterval);
  });

  it('durations take units on the command line and in the environment', () => {
    expect(parseSettings(['--stale-after', '10m'], {}).staleAfter).toBe(600);
    expect(parseSettings(['--shutdown-grace=1m30s'], {}).shutdownGrace).toBe(90);
    expect(parseSettings([], { FLEETPLANE_TOMBSTONE_RETENTION: '1h' }).tombstoneRetention).toBe(3_600);
    expect(parseSettings(['--status-flush-interval', '250ms'], {}).statusFlushInterval).toBe(0.25);
    expect(() => parseSettings(['--stale-after', '10 minutes'], {})).toThrow(/--stale-after: "10 minutes" is not a duration \(e\.g\. 30, 10m/);
  });

  it('an unknown setting near a known one says which', () => {
    expect(() => parseSettings(['--stale-aftr', '10'], {})).toThrow('unknown setting --stale-aftr (did you mean --stale-after?)');
    expect(() => parseSettings(['--colour', 'red'], {})).toThrow(/^unknown setting --colour$/);
  });

  const bad: [string, string[], Record<string, string>, string][] = [
    ['unknown flag', ['--colour', 'red'], {}, '--colour'],
    ['unknown flag with =', ['--bogus=1'], {}, '--bogus'],
    ['positional argument', ['now'], {}, 'now'],
    ['port not a number', ['--port', 'http'], {}, '--port'],
    ['port out of range', ['--port', '70000'], {}, '--port'],
    ['port not an integer', ['--port', '80.5'], {}, '--port'],
    ['negative retention', ['--tombstone-retention', '-5'], {}, '--tombstone-retention'],
    ['zero retention', ['--tombstone-retention', '0'], {}, '--tombstone-retention'],
    ['retention with an unknown unit', ['--tombstone-retention', '1y'], {}, '--tombstone-retention'],
    ['compaction interval not a number', ['--compaction-interval', 'often'], {}, '--compaction-interval'],
    ['log level not a choice', ['--log-level', 'loud'], {}, '--log-level'],
    ['missing value', ['--port'], {}, '--port'],
    ['boolean not a boolean', ['--memory=maybe'], {}, '--memory'],
    ['environment port', [], { FLEETPLANE_PORT: 'abc' }, 'FLEETPLANE_PORT'],
    ['environment log level', [], { FLEETPLANE_LOG_LEVEL: 'chatty' }, 'FLEETPLANE_LOG_LEVEL'],
    ['environment retention', [], { FLEETPLANE_TOMBSTONE_RETENTION: 'forever' }, 'FLEETPLANE_TOMBSTONE_RETENTION'],
    ['a certificate without its key', ['--tls-cert', '/etc/fp/cert.pem'], {}, '--tls-key'],
    ['a key without its certificate', [], { FLEETPLANE_TLS_KEY: '/etc/fp/key.pem' }, '--tls-cert'],
  ];
  for (const [what, argv, env, named] of bad) {
    it(`rejects ${what} with a one-line error naming ${named}`, () => {
      const err = errorOf(() => parseSettings(argv, env));
      expect(err.message).toContain(named);
      expect(err.message).not.toContain('\n');
    });
  }

  it('every setting has a flag, and the ones the issue names have their environment variables', () => {
    const envs = new Map(SETTING_SPECS.map((s) => [s.flag, s.env]));
    expect(Object.fromEntries(['host', 'port', 'data-dir', 'database-url', 'admin-token', 'tombstone-retention', 'compaction-interval', 'log-level'].map((f) => [f, envs.get(f)]))).toEqual({
      host: 'FLEETPLANE_HOST',
      port: 'FLEETPLANE_PORT',
      'data-dir': 'FLEETPLANE_DATA_DIR',
      'database-url': 'DATABASE_URL',
      'admin-token': 'FLEETPLANE_ADMIN_TOKEN',
      'tombstone-retention': 'FLEETPLANE_TOMBSTONE_RETENTION',
      'compaction-interval': 'FLEETPLANE_COMPACTION_INTERVAL',
      'log-level': 'FLEETPLANE_LOG_LEVEL',
    });
    expect(envs.has('memory')).toBe(true);
  });
});
