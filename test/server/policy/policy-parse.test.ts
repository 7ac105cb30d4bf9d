import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../../src/server/policy/policy-parse.js';

const GOOD = `# acme's access, reviewed in git
tag_owners:
  tag:web: [role:admin]
  tag:db: [role:owner, dba@example.com]
auto_approvers:
  - cidr: 10.20.0.0/16
    tags: [tag:router]
security_groups:
  db:
    description: databases
    applies_to: [tag:db]
    inbound:
      - proto: tcp
        ports: 5432
        from: [tag:web, 10.0.0.0/8]
tests:
  - from: tag:web
    to: tag:db
    port: tcp:5432
    expect: allow
`;

describe('policy documents: parse and check, with the place of the first problem', () => {
  it('accepts a document and gives its value', () => {
    const parsed = parsePolicy(GOOD);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.document.security_groups?.['db']?.inbound?.[0]).toEqual({ proto: 'tcp', ports: 5432, from: ['tag:web', '10.0.0.0/8'] });
    expect(parsePolicy('')).toMatchObject({ ok: true, document: {} });
  });

  it.each([
    ['a bad value', GOOD.replace('ports: 5432', 'ports: 99999'), '/security_groups/db/inbound/0/ports', 14, 16],
    ['a bad format', GOOD.replace('cidr: 10.20.0.0/16', 'cidr: 10.20.0.0/33'), '/auto_approvers/0/cidr', 6, 11],
    ['an unknown member', GOOD.replace('    description: databases', '    descripton: databases'), '/security_groups/db/descripton', 10, 17],
    ['a bad tag', GOOD.replace('  tag:web: [role:admin]', '  web: [role:admin]'), '/tag_owners/web', 3, 8],
    ['a bad group name', GOOD.replace('  db:\n', '  Db:\n'), '/security_groups/Db', 10, 5],
    ['a bad test', GOOD.replace('expect: allow', 'expect: maybe'), '/tests/0/expect', 20, 13],
  ])('names %s by its path, line and column', (_what, text, path, line, column) => {
    const parsed = parsePolicy(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect([parsed.problem.path, parsed.problem.line, parsed.problem.column]).toEqual([path, line, column]);
  });

  it('names where YAML stops parsing', () => {
    const parsed = parsePolicy('tag_owners:\n  tag:web: [role:admin\nsecurity_groups: {}\n');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.problem.message).toMatch(/^not YAML: /);
      expect(parsed.problem.line).toBeGreaterThan(1);
    }
    const twice = parsePolicy('tests: []\ntests: []\n');
    expect(twice.ok).toBe(false);
  });
});
