import http from 'node:http';
import { HEADERS, MEDIA, WATCH_KINDS, bearerAuthorization, paths, type WatchRequest } from '../../protocol/index.js';
import { scanWatchLine } from '../load/watch-line-scan.js';

/** What a fresh agent receives before all its kinds are at their tails. */
export interface ListBody {
  /** The NDJSON lines, each framed as its own HTTP chunk, as the server writes them. */
  framed: Buffer;
  /** NDJSON bytes (without chunk framing) and lines. */
  bodyBytes: number;
  lines: number;
}

/**
 * Opens the watch a fresh agent opens (device, security-group, organization;
 * no revision) and keeps what arrives until every kind's tail, then closes
 * it. The raw floor sends these exact bytes to each of its N connections.
 */
export function captureListBody(baseUrl: string, org: string, token: string, timeoutMs: number): Promise<ListBody> {
  const url = new URL(baseUrl);
  const request: WatchRequest = WATCH_KINDS.map((kind) => ({ kind }));
  const payload = Buffer.from(JSON.stringify(request));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let partial = '';
    let bodyBytes = 0;
    let lines = 0;
    const tails = new Set<number>();
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: paths.events(org),
        headers: { [HEADERS.authorization]: bearerAuthorization(token), [HEADERS.contentType]: MEDIA.json, 'content-length': String(payload.length) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`list for the raw floor: HTTP ${res.statusCode ?? 0}`));
        }
        res.setEncoding('latin1');
        res.on('data', (text: string) => {
          let s = partial + text;
          let nl = s.indexOf('\n');
          while (nl >= 0) {
            const line = s.slice(0, nl + 1);
            const bytes = Buffer.from(line, 'latin1');
            chunks.push(Buffer.from(`${bytes.length.toString(16)}\r\n`, 'latin1'), bytes, Buffer.from('\r\n', 'latin1'));
            bodyBytes += bytes.length;
            lines++;
            const scanned = scanWatchLine(line, 0, line.length - 1);
            if (scanned.type === 'tail') tails.add(scanned.kind);
            s = s.slice(nl + 1);
            nl = s.indexOf('\n');
          }
          partial = s;
          if (tails.size === WATCH_KINDS.length) {
            clearTimeout(timer);
            req.destroy();
            resolve({ framed: Buffer.concat(chunks), bodyBytes, lines });
          }
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`the list did not reach every tail within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(payload);
  });
}
