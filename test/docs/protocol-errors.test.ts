import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/protocol/index.js';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');

const TABLE_HEADER = '| code | HTTP status | meaning |';

/** The rows of the error table in docs/protocol.md "Errors": code → HTTP status as written. */
function documentedErrors(): Map<string, string> {
  const section = /^## Errors\n([\s\S]*?)(?=^## )/m.exec(doc)?.[1];
  if (section === undefined) throw new Error('docs/protocol.md has no "## Errors" section');
  const lines = section.split('\n');
  const start = lines.findIndex((l) => l.trim() === TABLE_HEADER);
  if (start < 0) throw new Error(`docs/protocol.md "Errors" has no table headed ${TABLE_HEADER}`);
  const rows = new Map<string, string>();
  // Skip the header and its |---| line; the table ends at the first line that isn't a row.
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [code = '', status = ''] = line.split('|').slice(1, 3).map((cell) => cell.trim().replace(/^`|`$/g, ''));
    if (rows.has(code)) throw new Error(`docs/protocol.md lists ${code} twice`);
    rows.set(code, status);
  }
  return rows;
}

describe('docs/protocol.md error table and the ERRORS catalog', () => {
  const table = documentedErrors();

  it('has the table', () => {
    expect(table.size).toBeGreaterThan(0);
  });

  it.each(Object.entries(ERRORS).map(([code, e]) => [code, e.status] as const))(
    'documents %s with status %i',
    (code, status) => {
      expect(table.get(code), `status of ${code} in the table`).toBe(String(status));
    },
  );

  it('lists no code the catalog lacks', () => {
    expect([...table.keys()].filter((code) => !Object.hasOwn(ERRORS, code))).toEqual([]);
  });
});
