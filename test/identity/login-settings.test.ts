import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSettings, SettingsError } from '../../src/server/index.js';
import { loginFromSettings } from '../../src/server/login/index.js';

const dir = mkdtempSync(join(tmpdir(), 'fp-login-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const quiet = pino({ level: 'silent' });
const ISSUER = ['--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'fleetplane'];

function refusal(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseSettings(['--memory', ...argv], env);
  } catch (err) {
    if (err instanceof SettingsError) return err.message;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

describe('user login settings', () => {
  it('without --oidc-issuer there is no login, whatever else is set', () => {
    expect(loginFromSettings(parseSettings(['--memory', '--oidc-client-id', 'x']), quiet)).toBeUndefined();
  });

  it('needs a client id and exactly one client secret source', () => {
    expect(refusal(['--oidc-issuer', 'https://id.example.com'])).toContain('--oidc-client-id');
    expect(refusal(ISSUER)).toContain('--oidc-client-secret-file');
    const file = join(dir, 's1');
    writeFileSync(file, 'x');
    expect(refusal([...ISSUER, '--oidc-client-secret-file', file], { FLEETPLANE_OIDC_CLIENT_SECRET: 'y' })).toContain('one of');
  });

  it('reads the secret from the file (trailing newline dropped), or from the environment', () => {
    const file = join(dir, 's2');
    writeFileSync(file, 'from-file\n');
    const viaFile = loginFromSettings(parseSettings(['--memory', ...ISSUER, '--oidc-client-secret-file', file]), quiet);
    expect(viaFile?.oidc.issuer.settings.clientSecret).toBe('from-file');
    const viaEnv = loginFromSettings(parseSettings(['--memory', ...ISSUER], { FLEETPLANE_OIDC_CLIENT_SECRET: 'from-env' }), quiet);
    expect(viaEnv?.oidc.issuer.settings.clientSecret).toBe('from-env');
    expect(() => loginFromSettings(parseSettings(['--memory', ...ISSUER, '--oidc-client-secret-file', join(dir, 'missing')]), quiet)).toThrow(SettingsError);
  });

  it('parses the lists, the admins and the lifetimes', () => {
    const login = loginFromSettings(
      parseSettings(['--memory', ...ISSUER, '--oidc-admins', 'Alice@Example.com, sub-bob', '--oidc-allowed-domains', 'example.com,@corp.test', '--session-ttl', '60', '--session-max-age', '120'], {
        FLEETPLANE_OIDC_CLIENT_SECRET: 's',
      }),
      quiet,
    );
    expect(login?.admins).toEqual({ emails: ['alice@example.com'], subjects: ['Alice@Example.com', 'sub-bob'] });
    expect(login?.oidc.policy.domains).toEqual(['example.com', 'corp.test']);
    expect([login?.sessionTtlSeconds, login?.sessionMaxAgeSeconds]).toEqual([60, 120]);
    expect(refusal([...ISSUER, '--session-ttl', '200', '--session-max-age', '100'], { FLEETPLANE_OIDC_CLIENT_SECRET: 's' })).toContain('--session-ttl');
    expect(refusal(['--public-url', 'https://fleet.example.com/path'])).toContain('--public-url');
  });

  it('refuses an issuer that is not https (http only on loopback)', () => {
    const s = parseSettings(['--memory', '--oidc-issuer', 'http://id.example.com', '--oidc-client-id', 'x'], { FLEETPLANE_OIDC_CLIENT_SECRET: 's' });
    expect(() => loginFromSettings(s, quiet)).toThrow(/https/);
  });
});
