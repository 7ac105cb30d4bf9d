/**
 * The agent compiles each check of what it receives at its first use
 * (schema-check.ts): here every one compiles, and each refuses a value that
 * isn't an object of its kind, with a problem that names where.
 */
import { describe, expect, it } from 'vitest';
import * as received from '../../src/agent/received/received-checks.js';
import type { Check } from '../../src/agent/received/index.js';

type AnyCheck = (value: unknown) => ReturnType<Check<unknown>>;
const checks: Record<string, AnyCheck> = {};
for (const [name, value] of Object.entries(received)) if (name.startsWith('check') && typeof value === 'function') checks[name] = value as AnyCheck;

describe("the agent's checks of what it receives", () => {
  it('are all found', () => {
    expect(Object.keys(checks).sort()).toEqual([
      'checkDevice',
      'checkEnrolledDevice',
      'checkNoParams',
      'checkOrganization',
      'checkOwnRegistrationKey',
      'checkRelayList',
      'checkRequestFrame',
      'checkSecurityGroup',
      'checkTokenRenewal',
    ]);
  });

  it.each(Object.keys(checks))('%s compiles at its first use and refuses what is not of its kind', (name) => {
    const check = checks[name];
    if (!check) throw new Error(name);
    const result = check(['not', 'an', 'object']);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problem).toMatch(/^\(the object\) /);
    // The compiled check is kept: the second use answers the same.
    expect(check(['not', 'an', 'object'])).toEqual(result);
  });
});
