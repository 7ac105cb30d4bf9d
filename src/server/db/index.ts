export * from './database.js';
export { openPglite, pgliteTemplate } from './pglite.js';
export { openPostgres, socketAware, type PostgresOptions } from './postgres.js';
export { instrument } from './instrumented.js';
export { migrate, MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
export { openEmbedded, startEmbeddedPostgres, DataDirInUseError, CannotRunAsRootError, NoEmbeddedBinariesError, type EmbeddedPostgres } from './embedded/index.js';
