/**
 * The raw fan-out floor: the least a Node server can do to push one line to
 * N held HTTP responses. It answers every request with a chunked 200 and
 * holds it; on `fire` (IPC) it writes one pre-encoded ~400-byte NDJSON line
 * (shaped like a fleetplane device change) to all of them. Nothing else: no
 * routing, no validation, no database.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { MEDIA, watchLineHead } from '../../protocol/index.js';
import type { RawFireResult, RawReply, RawRequest, RawStats, RawWriteMode } from './messages.js';

const held = new Set<http.ServerResponse>();
/** Pre-framed chunks written to every new response at once (op `list`: an initial list's bytes). */
let listBody: Buffer | undefined;

const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': MEDIA.watch, 'cache-control': 'no-store' });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  if (listBody) res.socket?.write(listBody);
  held.add(res);
  res.on('close', () => held.delete(res));
});
server.keepAliveTimeout = 0;
server.requestTimeout = 0;
server.headersTimeout = 0;
server.maxConnections = 100_000;

/** A device-shaped change line of about 400 bytes (fleetplane's are ~430). */
function rawLine(revision: number): string {
  const value = {
    id: '59be595a-3530-4706-9782-ad546d88a0c8',
    relay: false,
    hostname: `raw-floor-${revision}`,
    revision,
    endpoints: [],
    tunnel_ip: '100.64.0.1',
    created_at: '2026-11-21T22:03:13.022Z',
    public_key: '55iPhVbyVvlI3f/e6Mjp41l9P/GmSkM/xLKP3zjYD+Q=',
    updated_at: '2026-11-21T22:03:13.638Z',
    symmetric_nat: false,
    advertise_cidrs: [],
    organization_id: '33130f66-4f49-43aa-8f48-9e714c24d862',
  };
  return `${watchLineHead('change', 'device')}${JSON.stringify(value)}}\n`;
}

function fire(mode: RawWriteMode, revision: number): RawFireResult {
  const line = Buffer.from(rawLine(revision));
  const chunk = Buffer.concat([Buffer.from(`${line.length.toString(16)}\r\n`), line, Buffer.from('\r\n')]);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (mode === 'socket') {
    for (const res of held) res.socket?.write(chunk);
  } else {
    for (const res of held) res.write(line);
  }
  const loopMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { held: held.size, loopMs, loopCpuUs: cpu.user + cpu.system, lineBytes: line.length };
}

function stats(): RawStats {
  const cpu = process.cpuUsage();
  return { held: held.size, rssBytes: process.memoryUsage.rss(), cpuUs: cpu.user + cpu.system };
}

process.on('message', (m: unknown) => {
  const req = m as RawRequest;
  let out: RawReply;
  try {
    if (req.op === 'fire') out = { id: req.id, ok: true, result: fire(req.mode, req.revision) };
    else if (req.op === 'stats') out = { id: req.id, ok: true, result: stats() };
    else if (req.op === 'list') {
      listBody = Buffer.from(req.base64, 'base64');
      out = { id: req.id, ok: true, result: null };
    }
    else {
      (globalThis as { gc?: () => void }).gc?.();
      out = { id: req.id, ok: true, result: null };
    }
  } catch (err) {
    out = { id: req.id, ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  process.send?.(out);
});

process.on('disconnect', () => process.exit(0));

server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => {
  const addr = server.address();
  process.send?.({ type: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0 });
});
