#!/usr/bin/env node
// Compiles src/ into dist/ only when dist/ may be out of date, so `npm start`
// costs one compile after a change instead of one per start.
//
//   node scripts/build-if-stale.mjs          compile if stale (npm start)
//   node scripts/build-if-stale.mjs --force  always compile (npm run build)
//
// Stale means: no stamp, no dist/cli/main.js, or a file or directory under
// src/ (a directory's time changes when a file is added, removed or renamed)
// or tsconfig.json newer than the stamp. With a dashboard (src/dashboard and
// tsconfig.dashboard.json), it is type-checked and bundled too. The stamp gets the time the compile
// started, so a file saved during a compile makes the next start compile again;
// a failed compile leaves no stamp.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');
const inputs = [join(root, 'tsconfig.json'), join(root, 'src')];
const dashboardConfig = join(root, 'tsconfig.dashboard.json');
const dashboard = existsSync(dashboardConfig) && existsSync(join(root, 'src', 'dashboard'));
if (dashboard) inputs.push(dashboardConfig);
/** What a compile reads: TypeScript, and the dashboard's markup and styles. */
const SOURCE = /\.(ts|tsx|css|html)$/;

/** Newest modification time (ms) of `path` and, for a directory, everything under it that compiles. */
function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory() || SOURCE.test(entry.name)) max = Math.max(max, newest(join(path, entry.name)));
  }
  return max;
}

function stale() {
  if (!existsSync(stamp) || !existsSync(join(root, 'dist', 'cli', 'main.js'))) return true;
  const built = statSync(stamp).mtimeMs;
  return inputs.some((p) => newest(p) > built);
}

const force = process.argv.includes('--force');
if (!force && !stale()) process.exit(0);

const started = new Date();
// No stamp while compiling: a compile that fails or is interrupted leaves dist/ stale for the next start.
rmSync(stamp, { force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const res = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
if (res.status !== 0) process.exit(res.status ?? 1);
if (dashboard) {
  // The dashboard is type-checked as strictly as the rest, then bundled by esbuild (which only strips types).
  const checked = spawnSync(process.execPath, [tsc, '-p', dashboardConfig], { cwd: root, stdio: 'inherit' });
  if (checked.status !== 0) process.exit(checked.status ?? 1);
  const bundled = spawnSync(process.execPath, [join(root, 'scripts', 'build-dashboard.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (bundled.status !== 0) process.exit(bundled.status ?? 1);
}
writeFileSync(stamp, `built from the sources as of ${started.toISOString()}\n`);
utimesSync(stamp, started, started);
