/** IPC between the harness (raw-floor/raw-floor-server.ts) and the minimal server process (raw-floor/server.ts). */
export type RawRequest =
  | { id: number; op: 'fire'; mode: RawWriteMode; revision: number }
  | { id: number; op: 'stats' }
  | { id: number; op: 'gc' }
  | { id: number; op: 'list'; base64: string };

/**
 * `socket`: one pre-framed HTTP chunk written straight to every socket (what
 * fleetplane does); `res`: `res.write(line)` through node:http (NOTES.md: 20–35% dearer).
 */
export type RawWriteMode = 'socket' | 'res';

export interface RawFireResult {
  held: number;
  /** Time and CPU of the write loop itself. */
  loopMs: number;
  loopCpuUs: number;
  lineBytes: number;
}

export interface RawStats {
  held: number;
  rssBytes: number;
  cpuUs: number;
}

export type RawReply = { id: number; ok: true; result: RawFireResult | RawStats | null } | { id: number; ok: false; error: string };

export interface RawListening {
  type: 'listening';
  port: number;
}
