export { openEmbedded, EMBEDDED_POOL_SIZE, type EmbeddedDatabase } from './open-embedded.js';
export { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedOptions } from './embedded-postgres.js';
export { DataDirInUseError } from './data-dir-lock.js';
export { CannotRunAsRootError, type RunAs } from './run-as.js';
export { NoEmbeddedBinariesError } from './postgres-binaries.js';
