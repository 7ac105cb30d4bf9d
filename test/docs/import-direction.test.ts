import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderCycles, moduleSpecifiers, relativeImports, type ImportEdge } from './support/import-graph.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const srcDir = join(root, 'src');

/**
 * The direction of imports under src/, as the tree shows it:
 * - `src/protocol/` (the wire contract) and `src/util/` (small primitives)
 *   are the floor: each imports only itself (and packages), not even the
 *   other, so anything may use them and they pull in nothing.
 * - `src/server/` never imports `src/client/` (the SDK is the server's
 *   peer across the wire, and shares only the protocol with it).
 * - No circle between the folders of `src/server/`. A folder is the first
 *   path segment under `src/server/` (`store`, `audit`, `access`, …). A
 *   file directly in `src/server/` is a folder of its own (`errors.ts`,
 *   `metrics.ts`, `server.ts`, …): those files are unrelated, from the
 *   leaf every folder throws from (`errors.ts`) to the root that wires
 *   every folder together (`server.ts`), so taking them as one "root"
 *   folder would make a circle of any folder that both uses `errors.ts`
 *   and is used by `server.ts`. Imports within one folder may circle.
 * Type-only imports count: a circle of types is still a circle to read.
 */
let parsed: ImportEdge[] | undefined;

function sourceImports(): ImportEdge[] {
  if (parsed !== undefined) return parsed;
  const files = readdirSync(srcDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') || f.endsWith('.tsx'));
  expect(files.length).toBeGreaterThan(300);
  parsed = files.flatMap((f) => relativeImports(root, join(srcDir, f), readFileSync(join(srcDir, f), 'utf8')));
  return parsed;
}

const within = (path: string, dir: string): boolean => path.startsWith(`${dir}/`);
const show = (e: ImportEdge): string => `${e.from}:${e.line} imports ${e.to}`;

/** The folder of a file under src/server/ (see above): its first segment, or the file itself when it sits at the top. */
function serverFolder(path: string): string {
  const rest = path.slice('src/server/'.length);
  const slash = rest.indexOf('/');
  return slash === -1 ? rest : rest.slice(0, slash);
}

function serverCycles(edges: readonly ImportEdge[]): string[] {
  const inServer = edges.filter((e) => within(e.from, 'src/server') && within(e.to, 'src/server'));
  return folderCycles(inServer, serverFolder).map(
    ({ members, cycle }) =>
      `circle among ${members.join(', ')}: ${cycle.folders.join(' → ')}, by ${cycle.edges.map(show).join('; ')}`,
  );
}

describe('imports point one way', () => {
  it('src/protocol/ and src/util/ import nothing outside themselves', () => {
    const up = sourceImports().filter(
      (e) => (within(e.from, 'src/protocol') && !within(e.to, 'src/protocol')) || (within(e.from, 'src/util') && !within(e.to, 'src/util')),
    );
    expect(up.map(show)).toEqual([]);
  });

  it('src/server/ never imports src/client/', () => {
    expect(sourceImports().filter((e) => within(e.from, 'src/server') && within(e.to, 'src/client')).map(show)).toEqual([]);
  });

  it('the folders of src/server/ form no circle', () => {
    expect(serverCycles(sourceImports())).toEqual([]);
  });

  // The checks are only as good as the parse: every form of import must be seen, and nothing else.
  it('sees every form of import, and no specifier in a comment or a plain string', () => {
    const sample = [
      `import { a } from './a.js';`,
      `import type { B } from '../b/index.js';`,
      `import './side-effect.js';`,
      `export { c } from './c.js';`,
      `export * from './d.js';`,
      `export type { E } from './e.js';`,
      `const f = await import('./f.js');`,
      `type G = typeof import('./g.js');`,
      `import h = require('./h.js');`,
      `import { i } from 'node:path';`,
      `// import { j } from './j.js';`,
      `const k = './k.js';`,
      `/* export * from './l.js'; */`,
    ].join('\n');
    expect(moduleSpecifiers('sample.ts', sample)).toEqual([
      { specifier: './a.js', line: 1 },
      { specifier: '../b/index.js', line: 2 },
      { specifier: './side-effect.js', line: 3 },
      { specifier: './c.js', line: 4 },
      { specifier: './d.js', line: 5 },
      { specifier: './e.js', line: 6 },
      { specifier: './f.js', line: 7 },
      { specifier: './g.js', line: 8 },
      { specifier: './h.js', line: 9 },
      { specifier: 'node:path', line: 10 },
    ]);
  });

  // The circle the tree had before principal/ became a leaf, in small.
  it('names the circle and the imports that make it', () => {
    const edge = (from: string, to: string): ImportEdge => ({ from: `src/server/${from}`, to: `src/server/${to}`, line: 1 });
    const circle = [
      edge('store/credentials.ts', 'audit/record.ts'),
      edge('audit/record.ts', 'access/actor.ts'),
      edge('access/principal.ts', 'store/index.ts'),
      edge('access/access.ts', 'errors.ts'),
      edge('server.ts', 'store/index.ts'),
      edge('store/store.ts', 'store/credentials.ts'),
    ];
    expect(serverCycles(circle)).toEqual([
      'circle among access, audit, store: access → store → audit → access, by ' +
        'src/server/access/principal.ts:1 imports src/server/store/index.ts; ' +
        'src/server/store/credentials.ts:1 imports src/server/audit/record.ts; ' +
        'src/server/audit/record.ts:1 imports src/server/access/actor.ts',
    ]);
    expect(serverCycles(circle.slice(1))).toEqual([]);
  });
});
