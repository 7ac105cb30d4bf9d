/**
 * `--ca-file`: the agent's HTTPS calls (enrollment, watch, status) trust a
 * private CA. Node's global fetch takes no CA, so these calls use undici's
 * fetch (the implementation Node's own is built from: same semantics, same
 * errors) with a dispatcher that trusts `ca`; the tunnel passes `ca` to `ws`.
 */
import type { Agent } from 'undici';
import type { FetchLike } from '../../client/index.js';

/**
 * undici, loaded by the first call: it costs an agent about 0.15 s of CPU at
 * start-up, which only an agent given `--ca-file` needs to pay.
 */
const loadUndici = () => import('undici');
let undici: ReturnType<typeof loadUndici> | undefined;

/**
 * A fetch for the SDK that trusts the PEM certificates in `ca` (and only
 * those) for https. Request bodies must be strings, as the SDK's are.
 */
export function trustedFetch(ca: string | Buffer): FetchLike {
  let dispatcher: Agent | undefined;
  return async (input, init) => {
    if (init.body !== undefined && init.body !== null && typeof init.body !== 'string') throw new TypeError('trustedFetch: only string bodies are supported');
    const { Agent: UndiciAgent, fetch: undiciFetch } = await (undici ??= loadUndici());
    dispatcher ??= new UndiciAgent({ connect: { ca } });
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => (headers[k] = v));
    const res = await undiciFetch(input, {
      method: init.method ?? 'GET',
      headers,
      ...(typeof init.body === 'string' ? { body: init.body } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
      dispatcher,
    });
    // undici's Response implements the WHATWG interface the global one does; only the packages' declarations differ.
    return res as unknown as Response;
  };
}
