/**
 * The agent's STUN loop: keeps what it knows of the WireGuard port's public
 * mapping current, and says when that changed (docs/protocol.md "STUN").
 */
import { lookup } from 'node:dns/promises';
import type { Logger } from 'pino';
import { Backoff, equalJitterDelay } from '../../util/backoff.js';
import { createExecRunner } from '../dataplane/index.js';
import { errorMessage } from '../errors.js';
import { Wakeup } from '../wakeup.js';
import { sameStunState, type StunState } from './stun-state.js';
import { StunTimeoutError } from './stun-client.js';
import { WireguardPortProbe, type NatMapping } from './wireguard-port-probe.js';

/** What the loop needs of a WireguardPortProbe. */
export interface PortProbe {
  discover(signal?: AbortSignal): Promise<NatMapping>;
  close(): Promise<void>;
}

export interface NatDiscoveryOptions {
  /** The STUN server: an IPv4 address, or a name resolved (to IPv4) whenever a probe opens. */
  host: string;
  /** Its two ports. */
  ports: readonly [number, number];
  /** The WireGuard listen port. */
  wireguardPort: number;
  /** Longest wait between two re-checks; each wait is drawn in [half, whole]. */
  intervalMs: number;
  /** How long the last mapping outlives unanswered probes (default 3 × intervalMs). */
  keepMs?: number;
  logger: Logger;
  /** Called after the state changed (not on a re-check that found the same). */
  onChange?: (state: StunState) => void;
  /** Opens a probe towards `server` (an IPv4 address); default a WireguardPortProbe running `nft` and `conntrack`. */
  open?: (server: string) => Promise<PortProbe>;
  /** Resolves `host` to an IPv4 address (default DNS). */
  resolve?: (host: string) => Promise<string>;
  now?: () => number;
  random?: () => number;
}

/**
 * The rule: after `wireguardRunning()`, probe at once, then again after a
 * wait drawn in [intervalMs/2, intervalMs], and at once on `recheck()`.
 * An answered probe sets `mapped` (a change only if the mapping or its
 * symmetry differs). An unanswered or failed one is retried sooner
 * (backoff from 2 s up to intervalMs) and keeps the last state, until no
 * probe has been answered for `keepMs` since the last answer (or since
 * probing began): then the state is `off` and the probe is reopened, so a
 * STUN server whose address changed is found again. `pending` until the
 * first answer or `off`.
 */
export class NatDiscovery {
  readonly #o: NatDiscoveryOptions;
  readonly #recheck = new Wakeup();
  readonly #running = new Wakeup();
  #state: StunState = { kind: 'pending' };

  constructor(options: NatDiscoveryOptions) {
    this.#o = options;
  }

  get state(): StunState {
    return this.#state;
  }

  /** WireGuard listens on its port (the dataplane applied): probing may start. */
  wireguardRunning(): void {
    this.#running.fire();
  }

  /** Probe now (the local addresses changed: the mapping may have too). */
  recheck(): void {
    this.#recheck.fire();
  }

  /** Runs until `signal` aborts; never rejects. Removes the probe's SNAT on the way out. */
  async run(signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const now = o.now ?? Date.now;
    const keepMs = o.keepMs ?? 3 * o.intervalMs;
    if (!(await this.#running.wait(signal))) return;
    const failures = new Backoff({ initialMs: Math.min(2_000, o.intervalMs), maxMs: o.intervalMs, resetAfterMs: Number.POSITIVE_INFINITY }, o.random);
    let probe: PortProbe | undefined;
    let lastAnswer = now();
    try {
      while (!signal.aborted) {
        let wait: number;
        try {
          probe ??= await this.#open();
          const mapping = await probe.discover(signal);
          lastAnswer = now();
          if (failures.failures > 0) o.logger.info({ failures: failures.failures }, 'STUN answers again');
          failures.reset();
          this.#set({ kind: 'mapped', endpoint: mapping.endpoint, symmetric: mapping.symmetric });
          wait = equalJitterDelay(0, o.intervalMs, o.intervalMs, o.random);
        } catch (err) {
          if (signal.aborted) break;
          const fields = { server: o.host, ports: o.ports, failures: failures.failures + 1 };
          // The first failure of a streak is logged at info (a timeout: expected now and then) or warn
          // (anything else: someone should look), the rest of the streak at debug.
          const msg = 'STUN probe failed; the last mapping is kept for a while';
          if (failures.failures > 0) o.logger.debug({ ...fields, error: errorMessage(err) }, msg);
          else if (err instanceof StunTimeoutError) o.logger.info({ ...fields, error: errorMessage(err) }, msg);
          else o.logger.warn({ ...fields, err }, msg);
          wait = failures.next();
          if (now() - lastAnswer >= keepMs) {
            if (this.#state.kind !== 'off') o.logger.info({ server: o.host, silent_ms: now() - lastAnswer }, 'no STUN answer for too long: the stun endpoint is dropped');
            this.#set({ kind: 'off' });
            await probe?.close().catch((closeErr: unknown) => o.logger.warn({ err: closeErr }, 'closing the STUN probe failed'));
            probe = undefined;
            // Counted again from the reopen: a server that stays silent is reopened once per keepMs, not at every retry.
            lastAnswer = now();
          }
        }
        await this.#recheck.wait(signal, wait);
      }
    } finally {
      await probe?.close().catch((err: unknown) => o.logger.warn({ err }, 'removing the STUN probe failed'));
    }
  }

  async #open(): Promise<PortProbe> {
    const o = this.#o;
    const server = await (o.resolve ?? resolveIpv4)(o.host);
    if (o.open) return o.open(server);
    const probe = await WireguardPortProbe.open({ server, serverPorts: o.ports, wireguardPort: o.wireguardPort, runner: createExecRunner(), logger: o.logger });
    o.logger.info({ server, ports: o.ports, wireguard_port: o.wireguardPort, probe_port: probe.probePort }, 'STUN probe open');
    return probe;
  }

  #set(state: StunState): void {
    if (sameStunState(this.#state, state)) return;
    const before = this.#state;
    this.#state = state;
    if (state.kind === 'mapped') this.#o.logger.info({ endpoint: state.endpoint, symmetric_nat: state.symmetric, before }, 'STUN mapping of the WireGuard port');
    this.#o.onChange?.(state);
  }
}

async function resolveIpv4(host: string): Promise<string> {
  const { address } = await lookup(host, { family: 4 });
  return address;
}
