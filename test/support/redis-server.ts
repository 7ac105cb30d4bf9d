import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgres-server.js';

/** A throwaway redis-server on loopback that tests can stop and start again on the same port. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Its unix socket (reachable from any network namespace). */
  readonly socketPath: string;
  /** Stops the server (SIGKILL with `crash`, else SIGTERM) and waits for it to exit. */
  stop(options?: { crash?: boolean }): Promise<void>;
  /** Starts it again on the same port (after `stop`). */
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  dispose(): Promise<void>;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let answer = '';
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      answer += d.toString();
      if (answer.includes('\r\n')) {
        socket.destroy();
        resolve(answer.startsWith('+PONG'));
      }
    });
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetplane-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let log = '';

  const start = async (): Promise<void> => {
    if (child) throw new Error('redis-server is already running');
    log = '';
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--unixsocket', join(dir, 'redis.sock'), '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    proc.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}:\n${log}`);
      if (await ping(port)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`redis-server did not answer on port ${port}:\n${log}`);
  };

  const stop = async (options: { crash?: boolean } = {}): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(options.crash ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };

  await start();
  return {
    port,
    socketPath: join(dir, 'redis.sock'),
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    async dispose() {
      await stop({ crash: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
