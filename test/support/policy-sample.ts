/** A small policy document (web reaches db on 5432, one passing test) for the CLI and syncer tests; `ports` is on line 10. */
export const POLICY_SAMPLE = `# who may tag
tag_owners:
  tag:web: [role:admin]
  tag:db: [role:admin]
security_groups:
  db:
    applies_to: [tag:db]
    inbound:
      - proto: tcp
        ports: 5432
        from: [tag:web]
tests:
  - from: tag:web
    to: tag:db
    port: tcp:5432
    expect: allow
`;
