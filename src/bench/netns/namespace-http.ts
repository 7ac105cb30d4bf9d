/**
 * Reaching a server inside a lab namespace from the harness: a forwarder
 * runs inside the namespace and listens on a unix socket (the file system is
 * shared by every namespace), and a FetchLike speaks HTTP over it. The NAT
 * lab tests use it too (test/agent/support/unix-fetch.ts).
 */
import { request } from 'node:http';
import type { FetchLike } from '../../client/index.js';
import type { LabNode } from './nat-lab.js';
import { NsProcess } from './ns-process.js';

/** `node -e` source of the forwarder: argv[1] the socket path, argv[2] the host, argv[3] the port. */
export const FORWARDER_SOURCE = `
const net = require('node:net');
const [sock, host, port] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(Number(port), host);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(sock, () => process.stdout.write('forwarding\\n'));
`;

/** Starts the forwarder to `host:port` in `node`'s namespace, listening on `socketPath`; resolves once it listens. */
export async function startForwarder(node: LabNode, socketPath: string, host: string, port: number): Promise<NsProcess> {
  const p = NsProcess.start(node.prefix, process.execPath, ['-e', FORWARDER_SOURCE, socketPath, host, String(port)], `forwarder in ${node.name}`);
  await p.waitFor(/forwarding/, 10_000);
  return p;
}

/** A FetchLike over a unix socket. Bodies are buffered whole: enough for REST calls and /metrics, not for watch streams. */
export function unixSocketFetch(socketPath: string): FetchLike {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input);
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((v, k) => (headers[k] = v));
      const body = typeof init.body === 'string' ? init.body : undefined;
      if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
      const req = request({ socketPath, path: `${url.pathname}${url.search}`, method: init.method ?? 'GET', headers: { ...headers, host: url.host } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 500;
          const outHeaders = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') outHeaders.set(k, v);
          const noBody = status === 204 || status === 304;
          resolve(new Response(noBody ? null : Buffer.concat(chunks), { status, headers: outHeaders }));
        });
      });
      req.on('error', (err) => reject(new TypeError(`fetch failed: ${err.message}`, { cause: err })));
      init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
      req.end(body);
    });
}
