/** Pool size per server process on a PostgreSQL of its own (postgres.js's default too). */
export const DEFAULT_POOL_SIZE = 10;

/**
 * Pool size per server process on the embedded PostgreSQL. It shares the
 * server's cores, so more connections add no throughput (postgres.js
 * pipelines queries on busy ones), while each backend keeps its own caches
 * of every statement it ran: 10 per process left the backends 30 MiB larger
 * after 10,000 agents joined.
 */
export const EMBEDDED_POOL_SIZE = 4;
