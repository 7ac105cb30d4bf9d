/**
 * Preloaded into benchmarked server processes (`node --expose-gc --import`):
 * SIGUSR2 runs a full garbage collection, so memory can be read as what is
 * retained rather than what happens not to be collected yet. It changes
 * nothing else in the server.
 */
const gc = (globalThis as { gc?: () => void }).gc;
process.on('SIGUSR2', () => {
  gc?.();
});
