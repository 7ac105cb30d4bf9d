import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findRawWireNames, type RawWireName } from './support/raw-wire-names.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const srcDir = join(root, 'src');

/**
 * Strings the rules match that are not on the wire. Each says what it is
 * instead; an entry that no longer matches anything fails the check below,
 * so the list can only shrink.
 */
const NOT_WIRE_NAMES: readonly { file: string; text: string; why: string }[] = [
  { file: 'src/cli/ctl/flags.ts', text: 'if-match', why: 'declares the ctl flag --if-match (named after the header it fills)' },
  { file: 'src/cli/ctl/resources/crud.ts', text: 'if-match', why: 'reads the ctl flag --if-match' },
  { file: 'src/cli/ctl/resources/policy.ts', text: 'if-match', why: 'declares and reads the ctl flag --if-match of policy apply' },
  { file: 'src/cli/ctl/resources/policy.ts', text: 'ETAG', why: 'the placeholder of --if-match in policy apply --help' },
  { file: 'src/cli/workers.ts', text: 'fleetplane:listening', why: 'Node cluster IPC between one server’s primary and its workers' },
  { file: 'src/server/cluster-metrics.ts', text: 'fleetplane:metrics-request', why: 'Node cluster IPC between one server’s primary and its workers' },
  { file: 'src/server/cluster-metrics.ts', text: 'fleetplane:metrics-reply', why: 'Node cluster IPC between one server’s primary and its workers' },
  { file: 'src/server/gateway/cluster-agent-registry.ts', text: 'fleetplane:agent-registry', why: 'Node cluster IPC between one server’s primary and its workers' },
  { file: 'src/server/gateway/cluster-agent-registry.ts', text: 'fleetplane:relay-registry', why: 'Node cluster IPC between one server’s primary and its workers' },
];

const exempt = (f: RawWireName): boolean => NOT_WIRE_NAMES.some((n) => n.file === f.file && n.text === f.text);

/** TypeScript files under src/ that must take wire names from src/protocol/, not spell them. */
function sourcesOutsideProtocol(): string[] {
  return readdirSync(srcDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.startsWith(`protocol${sep}`))
    .map((f) => join(srcDir, f));
}

function scanSources(): RawWireName[] {
  const files = sourcesOutsideProtocol();
  expect(files.length).toBeGreaterThan(50);
  return files.flatMap((f) => findRawWireNames(relative(root, f).split(sep).join('/'), readFileSync(f, 'utf8')));
}

describe('wire names are spelled only in src/protocol/', () => {
  it('no TypeScript file outside src/protocol/ has a raw protocol string', () => {
    const findings = scanSources().filter((f) => !exempt(f));
    expect(findings.map((f) => `${f.file}:${f.line} ${JSON.stringify(f.text)} (${f.rule})`)).toEqual([]);
  });

  it('every exemption still matches a string in its file', () => {
    const findings = scanSources();
    const stale = NOT_WIRE_NAMES.filter((n) => !findings.some((f) => f.file === n.file && f.text === n.text));
    expect(stale).toEqual([]);
  });

  // The scan is only as good as its rules: each kind of raw string must be caught, and comments and prose must not be.
  it('flags every kind of raw protocol string, in literals, templates and regexes but not in comments', () => {
    const sample = [
      `const a = '/api/organizations';`,
      'const b = `/private/v1/agents/${id}/rpc/${m}`;',
      `const c = { 'X-Fleetplane-Revision': '1' };`,
      `const d = ['if-none-match', 'If-Match', 'retry-after', 'ETag'];`,
      `const e = 'application/json;stream=watch';`,
      'const f = `Bearer ${token}`;',
      'const g = /^bearer\\s+(.+)$/i;',
      'const h = `{"type":"tail","value":{"revision":${r}}}`;',
      `const i = '{"kind":"device","type":"change","value":';`,
      `const j = 'LISTEN fleetplane_signals';`,
      'const k = `fleetplane:agent:${id}`;',
      'const l = `curl ${url}/api/organizations`;',
      `const m = { type: 'http', scheme: 'bearer' };`,
      `// '/api/organizations', 'etag', Bearer, fleetplane_signals in a comment`,
      `/* "type":"bookmark" */ const n = 'plain';`,
      `import { x } from '/api/not-a-wire-name.js';`,
      `throw new Error('missing bearer token');`,
      'process.stderr.write(`fleetplane: unknown command "${c}"`);',
    ].join('\n');
    const found = findRawWireNames('sample.ts', sample);
    expect(found.map((f) => [f.line, f.rule])).toEqual([
      [1, 'API path'],
      [2, 'API path'],
      [3, 'header name'],
      [4, 'header name'],
      [4, 'header name'],
      [4, 'header name'],
      [4, 'header name'],
      [5, 'watch media type'],
      [6, 'Bearer scheme'],
      [7, 'Bearer scheme'],
      [8, 'watch event type'],
      [9, 'watch event type'],
      [10, 'NOTIFY channel'],
      [11, 'Redis key or channel'],
      [12, 'API path'],
      [13, 'Bearer scheme'],
    ]);
  });
});
