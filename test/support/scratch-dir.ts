import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Set by the suite's global setup: the directory it removes when the run ends. */
export const SCRATCH_ROOT_ENV = 'FLEETPLANE_TEST_SCRATCH';

let made = 0;

/**
 * A fresh directory for a test's files (a ctl config), inside the run's
 * scratch directory, which the global teardown removes: tests that make one
 * per ctl command leave nothing in the system's temporary directory. (Test
 * processes are stopped, not exited, so they can't remove it themselves.)
 */
export function scratchDir(prefix: string): string {
  const root = process.env[SCRATCH_ROOT_ENV];
  if (root === undefined) return mkdtempSync(join(tmpdir(), `fp-${prefix}-`));
  const dir = join(root, `${prefix}-${process.pid}-${++made}`);
  mkdirSync(dir);
  return dir;
}
