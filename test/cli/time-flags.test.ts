/**
 * ctl's time bounds and expiries take a duration (`10m`, `1h`, `7d`) as
 * well as an RFC 3339 time, through util/duration.ts; bad values are usage
 * errors naming the flag and the forms it takes.
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/exit-codes.js';
import { expiresAt, expiryFields, pastTime } from '../../src/cli/ctl/duration.js';

const NOW = Date.parse('2030-01-08T00:00:00Z');

describe('pastTime (ctl audit --since/--until)', () => {
  it('takes a duration as that long before now', () => {
    expect(pastTime('since', '10m', NOW)).toBe('2030-01-07T23:50:00.000Z');
    expect(pastTime('since', '1h', NOW)).toBe('2030-01-07T23:00:00.000Z');
    expect(pastTime('until', '7d', NOW)).toBe('2030-01-01T00:00:00.000Z');
    expect(pastTime('since', '1h30m', NOW)).toBe('2030-01-07T22:30:00.000Z');
    expect(pastTime('since', '90', NOW)).toBe('2030-01-07T23:58:30.000Z');
  });

  it('passes an RFC 3339 time as given, and nothing for nothing', () => {
    expect(pastTime('since', '2030-01-01T00:00:00Z', NOW)).toBe('2030-01-01T00:00:00Z');
    expect(pastTime('since', '2030-01-01T01:00:00+01:00', NOW)).toBe('2030-01-01T01:00:00+01:00');
    expect(pastTime('since', undefined, NOW)).toBeUndefined();
  });

  it.each(['yesterday', '2030-01-01', '1 h', '-1h', '2030-02-30T00:00:00Z'])('refuses %j naming the flag and both forms', (text) => {
    expect(() => pastTime('until', text, NOW)).toThrow(UsageError);
    expect(() => pastTime('until', text, NOW)).toThrow(
      `--until: "${text}" is neither an RFC 3339 time (2030-01-01T00:00:00Z) nor a duration ago (e.g. 30, 10m, 1h30m, 7d)`,
    );
  });
});

describe('expiryFields and expiresAt (--expires-at, --expires-in)', () => {
  it('takes --expires-in as whole seconds, or as the time that far from now', () => {
    expect(expiryFields(undefined, '7d')).toEqual({ expires_in: 604_800 });
    expect(expiryFields(undefined, '10m')).toEqual({ expires_in: 600 });
    expect(expiresAt(undefined, '1h', NOW)).toBe('2030-01-08T01:00:00.000Z');
    expect(expiresAt(undefined, '7d', NOW)).toBe('2030-01-15T00:00:00.000Z');
  });

  it('takes --expires-at as an RFC 3339 time, and neither as nothing', () => {
    expect(expiryFields('2030-02-01T00:00:00Z', undefined)).toEqual({ expires_at: '2030-02-01T00:00:00Z' });
    expect(expiresAt('2030-02-01T00:00:00Z', undefined, NOW)).toBe('2030-02-01T00:00:00Z');
    expect(expiryFields(undefined, undefined)).toEqual({});
    expect(expiresAt(undefined, undefined, NOW)).toBeUndefined();
  });

  it('refuses bad values and both flags as usage errors naming the flag and the form', () => {
    const refused = (at: string | undefined, within: string | undefined): string => {
      try {
        expiresAt(at, within, NOW);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused(undefined, 'soon')).toBe('--expires-in: "soon" is not a duration (e.g. 30, 10m, 1h30m, 7d)');
    expect(refused('soon', undefined)).toBe('--expires-at: "soon" is not an RFC 3339 time (e.g. 2030-01-01T00:00:00Z)');
    expect(refused('7d', undefined)).toBe('--expires-at: "7d" is not an RFC 3339 time (e.g. 2030-01-01T00:00:00Z); for a lifetime from now use --expires-in 7d');
    expect(refused('2030-02-01T00:00:00Z', '7d')).toBe('give at most one of --expires-at and --expires-in');
  });
});
