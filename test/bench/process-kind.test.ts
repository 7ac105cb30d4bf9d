import { describe, expect, it } from 'vitest';
import { processKind } from '../../src/bench/measure/tree-memory.js';

describe('the fleet bench sorts the server tree’s memory by kind of process', () => {
  it('names the embedded PostgreSQL’s sessions backends, its helpers by their titles, and other processes by their command', () => {
    expect(processKind('postgres', 'postgres: fleetplane postgres [local] idle')).toBe('postgres backend');
    expect(processKind('postgres', 'postgres: fleetplane postgres [local] INSERT')).toBe('postgres backend');
    expect(processKind('postgres', 'postgres: checkpointer')).toBe('postgres checkpointer');
    expect(processKind('postgres', 'postgres: background writer')).toBe('postgres background');
    expect(processKind('postgres', '/opt/pg/bin/postgres -D /data/postgres -p 5432')).toBe('postgres');
    expect(processKind('node', '/usr/bin/node dist/cli/main.js serve')).toBe('node');
  });
});
