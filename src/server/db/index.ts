export * from './database.js';
export { openPglite, pgliteTemplate } from './pglite.js';
export { openKeptPglite } from './pglite-kept.js';
export { openPostgres, socketAware, DEFAULT_POOL_SIZE, type PostgresOptions } from './postgres.js';
export { instrument } from './instrumented.js';
export { migrate, MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { openEmbedded, EMBEDDED_POOL_SIZE, startEmbeddedPostgres, DataDirInUseError, CannotRunAsRootError, NoEmbeddedBinariesError, type EmbeddedPostgres } from './embedded/index.js';
