import WebSocket from 'ws';
import { HEADERS, ROUTES, bearerAuthorization, decodeTunnelFrame, type DeviceStatusInput, type TunnelStatusAck } from '../../../src/protocol/index.js';
import { eventually } from '../../watch/support/watch-server.js';

/** A device's tunnel that sends status frames and collects their acks. */
export class StatusTunnel {
  readonly acks = new Map<number, TunnelStatusAck>();
  #seq = 0;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: WebSocket.RawData) => {
      const frame = decodeTunnelFrame(data.toString());
      if (frame && 'type' in frame && frame.type === 'status_ack') this.acks.set(frame.seq, frame);
    });
  }

  static open(url: string, token: string): Promise<StatusTunnel> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}${ROUTES.agentTunnel}`, { headers: { [HEADERS.authorization]: bearerAuthorization(token) } });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new StatusTunnel(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends one status frame (with `ack` when given); returns its seq. */
  send(status: unknown, ack?: string): number {
    const seq = ++this.#seq;
    this.ws.send(JSON.stringify({ type: 'status', seq, status, ...(ack === undefined ? {} : { ack }) }));
    return seq;
  }

  /** Sends one status frame; resolves with its ack. */
  async status(status: unknown, ack?: string): Promise<TunnelStatusAck> {
    const seq = this.send(status, ack);
    await eventually(() => this.acks.has(seq), `the ack of status ${seq}`);
    return this.acks.get(seq)!;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

/** A status report as an agent sends it: `applied` revision, and `error` when the apply failed. */
export function statusReport(applied: number | null, error: string | null = null): DeviceStatusInput {
  return { applied_revision: applied, apply_error: error, local_endpoints: [], os: 'linux', agent_version: 'test' };
}
