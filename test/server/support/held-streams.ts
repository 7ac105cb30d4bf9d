/**
 * Every kind of connection a stop must end, held open against a real
 * `fleetplane serve`: a watch stream, a convergence stream, an agent tunnel,
 * and a request whose body never finishes.
 */
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { HEADERS, paths, QUERY } from '../../../src/protocol/index.js';
import { eventually, Fleet, metric } from '../../gateway/support.js';

/** One NDJSON line of a watch or convergence stream (only what these tests read). */
export interface StreamLine {
  type: string;
  value?: { code?: string; message?: string };
}

/** How a response body ended: `end` with its last chunk, `reset` when its connection was cut. */
export type BodyEnd = 'end' | 'reset';

export interface LineStream {
  readonly lines: StreamLine[];
  /** Settles once the body is over, however it ended. */
  readonly ended: Promise<BodyEnd>;
  /** Set once `ended` settled. */
  readonly state: { end?: BodyEnd };
}

/** Opens a stream and reads it line by line until it ends; rejects unless it answers 200. */
export async function openLineStream(url: string, init: RequestInit): Promise<LineStream> {
  const res = await fetch(url, init);
  if (res.status !== 200 || !res.body) throw new Error(`${url}: expected a 200 stream, got ${res.status}: ${await res.text()}`);
  const reader = res.body.getReader();
  const lines: StreamLine[] = [];
  const state: { end?: BodyEnd } = {};
  const ended = (async (): Promise<BodyEnd> => {
    const decoder = new TextDecoder();
    let partial = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'end';
        partial += decoder.decode(value, { stream: true });
        const parts = partial.split('\n');
        partial = parts.pop() ?? '';
        // Empty lines are keepalives.
        for (const line of parts) if (line !== '') lines.push(JSON.parse(line) as StreamLine);
      }
    } catch {
      return 'reset';
    }
  })().then((end) => (state.end = end));
  return { lines, ended, state };
}

export interface HeldConnections {
  watch: LineStream;
  convergence: LineStream;
  tunnel: { ws: WebSocket; closed: Promise<number>; state: { code?: number } };
  /** A POST whose headers promised more body than was sent. */
  halfSent: { socket: Socket; closed: Promise<void>; state: { closed: boolean; received: string } };
  /** Ends what is still open on the client side. */
  release(): void;
}

/**
 * Opens the four connections on `base` as a client of organization `fleet`
 * (a read token for the streams, an enrolled device's token for the tunnel),
 * and returns once the server holds every one of them.
 */
export async function holdConnections(base: string, fleet: Fleet): Promise<HeldConnections> {
  const device = await fleet.enroll();
  const auth = { [HEADERS.authorization]: `Bearer ${fleet.reader}` };
  const watch = await openLineStream(`${base}${paths.events(fleet.org)}`, {
    method: 'POST',
    headers: { ...auth, [HEADERS.contentType]: 'application/json' },
    body: JSON.stringify([{ kind: 'device' }]),
  });
  const convergence = await openLineStream(`${base}${paths.convergence(fleet.org)}?${QUERY.watch}=true`, { headers: auth });

  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${paths.agentTunnel()}`, { headers: { [HEADERS.authorization]: `Bearer ${device.token}` } });
  const tunnelState: { code?: number } = {};
  const tunnelClosed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve((tunnelState.code = code))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`tunnel upgrade answered ${res.statusCode ?? '?'}`)));
  });
  // Errors after the handshake end in 'close', whose code is what the tests read.
  ws.on('error', () => undefined);

  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const halfState = { closed: false, received: '' };
  socket.on('error', () => undefined);
  socket.setEncoding('utf8').on('data', (d: string) => (halfState.received += d));
  const halfClosed = new Promise<void>((resolve) => socket.once('close', () => resolve(void (halfState.closed = true))));
  const body = JSON.stringify({ name: 'never-finished-body' });
  await new Promise<void>((resolve, reject) =>
    socket.write(
      `POST ${paths.organizations()} HTTP/1.1\r\nhost: ${url.host}\r\n${HEADERS.authorization}: Bearer ${fleet.admin}\r\n` +
        `${HEADERS.contentType}: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
      (err) => (err ? reject(err) : resolve()),
    ),
  );

  // The server counts a stream once its owner holds it; a scrape answered after that means the half-sent
  // request's connection, opened before the scrape's, was accepted too.
  await eventually('the watch stream reached its tail', () => watch.lines.some((l) => l.type === 'tail'));
  await eventually('the convergence stream sent its first value', () => convergence.lines.some((l) => l.type === 'convergence'));
  for (const kind of ['watch', 'convergence', 'tunnel']) {
    await eventually(`the server holds the ${kind} stream`, async () => (await metric(base, 'fleetplane_streams_open', { kind })) === 1);
  }
  return {
    watch,
    convergence,
    tunnel: { ws, closed: tunnelClosed, state: tunnelState },
    halfSent: { socket, closed: halfClosed, state: halfState },
    release() {
      ws.terminate();
      socket.destroy();
    },
  };
}
