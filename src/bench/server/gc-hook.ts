/**
 * Preloaded into benchmarked server processes (`node --expose-gc --import`):
 * SIGUSR2 runs a full garbage collection, so memory can be read as what is
 * retained rather than what happens not to be collected yet, and prints the
 * process's memory split (one JSON line on stderr) so RSS can be told from
 * the JavaScript heap. It changes nothing else in the server.
 */
const gc = (globalThis as { gc?: () => void }).gc;
process.on('SIGUSR2', () => {
  gc?.();
  const m = process.memoryUsage();
  process.stderr.write(`${JSON.stringify({ bench: 'memory after gc', pid: process.pid, rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers })}\n`);
});
