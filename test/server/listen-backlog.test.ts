import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildDist } from '../support/fleetplane-process.js';
import { serve } from './support/serve-process.js';

const PROCESS_TIMEOUT = 180_000;
/** More than Node's default listen queue (511) holds. */
const HERD = 1_000;
/** How long the count of handshakes may stand still before it is read: bounds the wait, times nothing. */
const SETTLED_MS = 1_500;

function somaxconn(): number {
  try {
    return Number.parseInt(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'), 10);
  } catch {
    return 0;
  }
}

/** Connections whose handshake the kernel completed once that count stopped growing, and the connections that failed. */
async function handshakes(sockets: readonly Socket[]): Promise<{ connected: number; errors: string[] }> {
  let connected = 0;
  const errors: string[] = [];
  let last = performance.now();
  for (const s of sockets) {
    s.once('connect', () => ((connected += 1), (last = performance.now())));
    s.once('error', (err) => errors.push(err.message));
  }
  while (connected + errors.length < sockets.length && performance.now() - last < SETTLED_MS) await new Promise((r) => setTimeout(r, 50));
  return { connected, errors };
}

describe('the listen queue', () => {
  beforeAll(buildDist, 120_000);
  // The kernel caps the queue at net.core.somaxconn: at Node's 511 or less, a herd can't be told from the default.
  const room = somaxconn();
  const enough = room > HERD;
  if (!enough) console.warn(`SKIPPED: net.core.somaxconn is ${room}; the listen-queue test needs more than ${HERD}`);

  it.skipIf(!enough)(`holds a herd of ${HERD} connections while the server accepts none (a herd of agents is queued, not dropped)`, async () => {
    const p = serve(['--memory', '--port', '0', '--host', '127.0.0.1']);
    const sockets: Socket[] = [];
    try {
      const [, port] = await p.waitFor(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      // Stopped, the server accepts nothing: every handshake waits in the kernel's queue, or is dropped past it.
      p.child.kill('SIGSTOP');
      for (let i = 0; i < HERD; i++) {
        sockets.push(connect(Number(port), '127.0.0.1'));
      }
      expect(await handshakes(sockets)).toEqual({ connected: HERD, errors: [] });
    } finally {
      for (const s of sockets) s.destroy();
      p.child.kill('SIGCONT');
      p.child.kill('SIGKILL');
    }
  }, PROCESS_TIMEOUT);
});
