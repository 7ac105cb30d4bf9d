/**
 * The page, its worker and the SDK bundle without TypeBox: they import the
 * protocol from src/protocol/wire.ts, which loads no schema. A schema file in
 * their module graph would ship its `Type.Object(...)` calls and TypeBox
 * with them (a bundler keeps calls), about 19 KB gzipped per script.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const TYPEBOX = '@sinclair/typebox';

/** Every module in `entry`'s graph, as esbuild resolves it for a browser, without writing the bundle. */
async function moduleGraph(entry: string): Promise<Metafile['inputs']> {
  const result = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: join(root, 'dist', 'bundle-schema-free-test'),
    write: false,
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: root,
  });
  return result.metafile.inputs;
}

/** The modules of the graph that import TypeBox: where it came back in. */
function typeboxImporters(inputs: Metafile['inputs']): string[] {
  return Object.entries(inputs)
    .filter(([path, input]) => !path.includes(TYPEBOX) && input.imports.some((i) => i.path.includes(TYPEBOX)))
    .map(([path]) => path);
}

function typeboxModules(inputs: Metafile['inputs']): string[] {
  return Object.keys(inputs).filter((path) => path.includes(TYPEBOX));
}

describe('the page bundles no TypeBox', () => {
  for (const entry of ['src/dashboard/main.tsx', 'src/dashboard/worker.ts', 'src/client/index.ts', 'src/protocol/wire.ts']) {
    it(`${entry} has no ${TYPEBOX} module in its graph`, async () => {
      const inputs = await moduleGraph(entry);
      expect(Object.keys(inputs).length).toBeGreaterThan(1);
      // Joined, so that a failure lists every importer rather than a count.
      expect(typeboxImporters(inputs).join('\n'), 'these modules import TypeBox: import the protocol from wire.ts, and keep constants out of schema files').toBe('');
      expect(typeboxModules(inputs)).toEqual([]);
    });
  }

  it('sees TypeBox where it is: the full protocol entry, schemas included', async () => {
    const inputs = await moduleGraph('src/protocol/index.ts');
    expect(typeboxModules(inputs).length).toBeGreaterThan(0);
    expect(typeboxImporters(inputs)).toContain('src/protocol/schemas/common.ts');
  });
});
