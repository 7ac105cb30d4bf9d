import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:dgram';
import { decodeStunMessage, encodeBindingRequest, readMappedAddress, STUN_MESSAGE_TYPE, type StunAddress } from '../../protocol/index.js';

export interface BindingOptions {
  /** Sends before giving up (RFC 5389 retransmits too; fewer here: a probe is re-run later). Default 4. */
  attempts?: number;
  /** Wait for an answer after the first send, doubled after each (RFC 5389's RTO). Default 250 ms. */
  initialTimeoutMs?: number;
  signal?: AbortSignal;
}

/** No usable answer came (the server or the path is down, or the NAT dropped the probe). */
export class StunTimeoutError extends Error {
  override readonly name = 'StunTimeoutError';
}

/**
 * Sends Binding requests from `socket` to host:port until one is answered
 * and returns the mapped address of the answer. Other datagrams arriving on
 * the socket are left alone; answers with another transaction id ignored.
 */
export function bindingRequest(socket: Socket, host: string, port: number, opts: BindingOptions = {}): Promise<StunAddress> {
  const attempts = opts.attempts ?? 4;
  const transactionId = randomBytes(12);
  const request = encodeBindingRequest(transactionId);
  return new Promise<StunAddress>((resolve, reject) => {
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: Error | undefined, address?: StunAddress): void => {
      clearTimeout(timer);
      socket.off('message', onMessage);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else if (address) resolve(address);
    };
    const onAbort = (): void => finish(opts.signal?.reason instanceof Error ? opts.signal.reason : new Error('aborted'));
    const onMessage = (datagram: Buffer): void => {
      const m = decodeStunMessage(datagram);
      if (!m || m.classic || !Buffer.from(m.transactionId).equals(transactionId)) return;
      if (m.type !== STUN_MESSAGE_TYPE.bindingSuccess) {
        finish(new Error(`STUN server ${host}:${port} refused the Binding request (message type 0x${m.type.toString(16)})`));
        return;
      }
      const mapped = readMappedAddress(m);
      finish(mapped ? undefined : new Error(`STUN server ${host}:${port} answered without a mapped address`), mapped);
    };
    const send = (): void => {
      if (sent === attempts) {
        finish(new StunTimeoutError(`no STUN answer from ${host}:${port} after ${attempts} requests`));
        return;
      }
      const wait = (opts.initialTimeoutMs ?? 250) * 2 ** sent;
      sent++;
      socket.send(request, port, host, (err) => {
        if (err) finish(err);
      });
      timer = setTimeout(send, wait);
    };
    if (opts.signal?.aborted) {
      onAbort();
      return;
    }
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('message', onMessage);
    send();
  });
}
