import type { DeviceStatusInput } from './schemas/device.js';
import { STATUS_ACK_MODES, type TunnelFrame, type TunnelStatusFrame } from './tunnel.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/**
 * Decodes one tunnel text message. Returns undefined when it is not JSON or
 * not one of the frames of docs/protocol.md (the caller logs it): `status` frames
 * need a positive integer `seq` and an object `status` (and keep `ack` only when it is
 * `errors`), `status_ack` a `seq`
 * and an optional `error: {code, message}`; requests need a string `id`, a string `method`, an object `params` (absent: `{}`) and a
 * positive `deadline_ms`; responses a string `id` and exactly one of `result`
 * or `error: {code, message}`. Unknown fields are ignored.
 */
export function decodeTunnelFrame(text: string): TunnelFrame | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(v)) return undefined;
  if (v['type'] === 'ping' || v['type'] === 'pong') return { type: v['type'] };
  if (v['type'] === 'status') {
    const seq = v['seq'];
    const status = v['status'];
    if (!isSeq(seq) || !isObject(status)) return undefined;
    // The fields are checked against DeviceStatusInput by the receiver, which answers validation_failed.
    const frame: TunnelStatusFrame = { type: 'status', seq, status: status as unknown as DeviceStatusInput };
    // Any other value of `ack` asks for the default: answering more than asked is always safe.
    if (v['ack'] === STATUS_ACK_MODES.errors) frame.ack = STATUS_ACK_MODES.errors;
    return frame;
  }
  if (v['type'] === 'status_ack') {
    const seq = v['seq'];
    const error = v['error'];
    if (!isSeq(seq)) return undefined;
    if (error === undefined) return { type: 'status_ack', seq };
    if (!isObject(error) || typeof error['code'] !== 'string' || typeof error['message'] !== 'string') return undefined;
    return { type: 'status_ack', seq, error: { code: error['code'], message: error['message'] } };
  }
  const id = v['id'];
  if (typeof id !== 'string' || id === '') return undefined;
  if (typeof v['method'] === 'string') {
    const params = v['params'] ?? {};
    const deadline = v['deadline_ms'];
    if (!isObject(params) || typeof deadline !== 'number' || !Number.isFinite(deadline) || deadline <= 0) return undefined;
    return { id, method: v['method'], params, deadline_ms: deadline };
  }
  const error = v['error'];
  if (error !== undefined) {
    if (!isObject(error) || typeof error['code'] !== 'string' || typeof error['message'] !== 'string') return undefined;
    return { id, error: { code: error['code'], message: error['message'] } };
  }
  if (!('result' in v)) return undefined;
  return { id, result: v['result'] };
}
