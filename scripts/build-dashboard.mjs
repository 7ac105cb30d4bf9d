#!/usr/bin/env node
// Bundles the dashboard (src/dashboard, Preact) into dist/dashboard: the page's
// minified script and stylesheet, and the SharedWorker every tab shares (its
// page stream), with content hashes in their names, and index.html naming them;
// prints each file's size, minified and gzipped. Type-checking is tsc's job (tsconfig.dashboard.json);
// esbuild only strips types.
//
//   node scripts/build-dashboard.mjs
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  entryPoints: { app: join(src, 'main.tsx'), 'app-worker': join(src, 'worker.ts') },
  bundle: true,
  format: 'esm',
  target: ['chrome115', 'firefox115', 'safari16'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  entryNames: '[name]-[hash]',
  outdir: out,
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.entries(result.metafile.outputs).map(([p, o]) => ({ file: basename(p), entry: o.entryPoint ? basename(o.entryPoint) : undefined }));
const script = outputs.find((o) => o.entry === 'main.tsx' && o.file.endsWith('.js'))?.file;
const worker = outputs.find((o) => o.entry === 'worker.ts')?.file;
const style = outputs.find((o) => o.file.endsWith('.css'))?.file;
if (!script || !style || !worker) throw new Error(`the dashboard bundle is missing its script, worker or stylesheet: ${outputs.map((o) => o.file).join(', ')}`);
const html = readFileSync(join(src, 'index.html'), 'utf8').replace('%SCRIPT%', `/ui/${script}`).replace('%STYLE%', `/ui/${style}`).replace('%WORKER%', `/ui/${worker}`);
writeFileSync(join(out, 'index.html'), html);
const gzip = (f) => gzipSync(readFileSync(join(out, f)), { level: 9 }).length;
const manifest = { script, worker, style, gzipBytes: { script: gzip(script), worker: gzip(worker), style: gzip(style) } };
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
const size = (f, gzipped) => `${f} ${statSync(join(out, f)).size} B (${gzipped} B gzipped)`;
process.stdout.write(`dashboard: ${size(script, manifest.gzipBytes.script)}, ${size(worker, manifest.gzipBytes.worker)}, ${size(style, manifest.gzipBytes.style)}\n`);
