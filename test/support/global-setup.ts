import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { hasPostgres, IN_CI } from './binaries.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the shared PostgreSQL cluster, or '' when PostgreSQL is absent. */
    pgAdminUrl: string;
  }
}

let pg: PostgresServer | undefined;

/** One PostgreSQL cluster for the whole run; each suite creates its own database on it. */
export async function setup(project: TestProject): Promise<void> {
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
}
