import type { TunnelFrame } from './tunnel.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Decodes one tunnel text message. Returns undefined when it is not JSON or
 * not one of the frames of PROTOCOL.md (the caller logs it): requests need a
 * string `id`, a string `method`, an object `params` (absent: `{}`) and a
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
