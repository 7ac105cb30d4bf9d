#!/usr/bin/env node
// Bundles the dashboard (src/dashboard, Preact) into dist/dashboard: one
// minified script and one stylesheet with content hashes in their names, and
// index.html naming them. Type-checking is tsc's job (tsconfig.dashboard.json);
// esbuild only strips types.
//
//   node scripts/build-dashboard.mjs
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src', 'dashboard');
const out = join(root, 'dist', 'dashboard');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: [join(src, 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['chrome115', 'firefox115', 'safari16'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  entryNames: 'app-[hash]',
  outdir: out,
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
if (!script || !style) throw new Error(`the dashboard bundle is missing its script or stylesheet: ${outputs.join(', ')}`);
const html = readFileSync(join(src, 'index.html'), 'utf8').replace('%SCRIPT%', `/ui/${script}`).replace('%STYLE%', `/ui/${style}`);
writeFileSync(join(out, 'index.html'), html);
const gzip = (f) => gzipSync(readFileSync(join(out, f)), { level: 9 }).length;
const manifest = { script, style, gzipBytes: { script: gzip(script), style: gzip(style) } };
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`dashboard: ${script} ${manifest.gzipBytes.script} B gzipped, ${style} ${manifest.gzipBytes.style} B gzipped\n`);
