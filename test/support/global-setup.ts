import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, pgliteTemplate } from '../../src/server/db/index.js';
import { hasPostgres, IN_CI } from './binaries.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';
import { SCRATCH_ROOT_ENV } from './scratch-dir.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the shared PostgreSQL cluster, or '' when PostgreSQL is absent. */
    pgAdminUrl: string;
  }
}

let pg: PostgresServer | undefined;
let template: string | undefined;
let scratchRoot: string | undefined;

/**
 * A migrated, empty in-memory database, dumped once: every server the suite
 * starts with `memory` (in-process, and as a process with `--memory`) loads it
 * instead of running initdb and the migrations, and a worker empties a closed
 * server's copy for its next one (about 0.1 s of CPU a start instead of 2 s,
 * and the suite starts a few hundred). FLEETPLANE_MEMORY_TEMPLATE reaches the
 * test workers and the processes they start through the environment.
 */
async function memoryTemplate(): Promise<string> {
  const dump = await pgliteTemplate((db) => migrate(db));
  const path = join(tmpdir(), `fleetplane-test-template-${process.pid}.tar`);
  await writeFile(path, Buffer.from(await dump.arrayBuffer()));
  return path;
}

/** One PostgreSQL cluster for the whole run; each suite creates its own database on it. */
export async function setup(project: TestProject): Promise<void> {
  scratchRoot = await mkdtemp(join(tmpdir(), 'fp-test-'));
  process.env[SCRATCH_ROOT_ENV] = scratchRoot;
  template = await memoryTemplate();
  process.env.FLEETPLANE_MEMORY_TEMPLATE = template;
  // Many servers run at once (in-process and as processes, in two forks): none may hold the STUN ports 3478/3479.
  process.env.FLEETPLANE_STUN_PORT = '0';
  process.env.FLEETPLANE_STUN_ALT_PORT = '0';
  if (hasPostgres()) {
    pg = await startPostgres();
    project.provide('pgAdminUrl', pg.adminUrl);
  } else {
    if (IN_CI) throw new Error('PostgreSQL binaries are missing in CI: .ci/run must install postgresql.');
    process.stderr.write('\n*** PostgreSQL is not installed: PostgreSQL suites will be skipped. ***\n\n');
    project.provide('pgAdminUrl', '');
  }
}

export async function teardown(): Promise<void> {
  pg?.stop();
  if (template) await rm(template, { force: true });
  if (scratchRoot) await rm(scratchRoot, { recursive: true, force: true });
}
