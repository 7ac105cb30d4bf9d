import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../../src/server/policy/policy-parse.js';
import { failingPolicyTests } from '../../../src/server/policy/policy-tests.js';
import type { PolicyDocument } from '../../../src/protocol/index.js';

function doc(text: string): PolicyDocument {
  const parsed = parsePolicy(text);
  if (!parsed.ok) throw new Error(parsed.problem.message);
  return parsed.document;
}

const BASE = `
security_groups:
  web:
    applies_to: [tag:web]
    inbound:
      - proto: tcp
        ports: 443
    outbound:
      - proto: tcp
        ports: 5432
        to: [group:db]
  db:
    applies_to: [tag:db]
    inbound:
      - proto: tcp
        ports: 5000-6000
        from: [tag:web, 10.9.0.0/16]
`;

const withTests = (tests: string) => doc(`${BASE}tests:\n${tests}`);

describe('policy document tests, evaluated against the document', () => {
  // db has no outbound rules: its devices open no connection (as an agent applies an empty list).
  it('passes what the groups allow both ways, and what they deny', () => {
    const d = withTests(`
  - { from: tag:web, to: tag:db, port: tcp:5432, expect: allow }
  - { from: tag:web, to: tag:db, port: tcp:22, expect: deny }
  - { from: tag:db, to: tag:web, port: tcp:443, expect: deny }
  - { from: tag:ops, to: tag:web, port: tcp:443, expect: allow }
  - { from: tag:ops, to: tag:db, port: tcp:5432, expect: deny }
  - { from: tag:ops, to: tag:laptop, port: udp:53, expect: allow }
  - { from: group:web, to: group:db, port: tcp:5432, expect: allow }
`);
    expect(failingPolicyTests(d)).toEqual([]);
  });

  it('names each failing test, and why: the destination does not admit it, or the source does not let it out', () => {
    const d = withTests(`
  - { from: tag:db, to: tag:web, port: tcp:22, expect: allow }
  - { from: tag:web, to: tag:ops, port: tcp:22, expect: allow }
  - { from: tag:web, to: tag:db, port: tcp:5432, expect: deny }
`);
    expect(failingPolicyTests(d).map((f) => [f.index, f.reason])).toEqual([
      [0, 'group web of tag:web admits no tcp:22 from tag:db'],
      [1, 'group web of tag:web lets no tcp:22 out to tag:ops'],
      [2, 'expected deny, but group db admits it, group web lets it out'],
    ]);
  });
});
