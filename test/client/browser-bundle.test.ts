import { describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../../src/client/index.ts', import.meta.url));
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

describe('browser compatibility', () => {
  it('bundles src/client for the browser without any Node built-in', async () => {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path));
    expect(imports.filter((p) => BUILTINS.has(p) || p.startsWith('node:'))).toEqual([]);
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((p) => p.endsWith('src/client/index.ts'))).toBe(true);
    expect(inputs.filter((p) => p.includes('src/server/') || p.includes('src/cli/'))).toEqual([]);
    const code = result.outputFiles[0]!.text;
    expect(code).not.toMatch(/\brequire\(["'](node:)?(fs|http|https|net|stream|buffer|crypto|util|events)["']\)/);
    expect(code).not.toMatch(/\bprocess\.env\b|\bBuffer\.from\b/);
  });
});
