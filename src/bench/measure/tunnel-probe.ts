import { AGENT_METHODS, QUERY, paths } from '../../protocol/index.js';
import type { FleetApi } from '../http-api.js';
import type { AgentIdentity } from '../load/agent-messages.js';
import { median } from '../stats.js';

/** Requests through agents' tunnels: `POST .../devices/{id}/rpc/ping`. */
export interface TunnelProbe {
  asked: number;
  /** Answered 200 with `{pong: true, revision}` where revision is the head. */
  answered: number;
  medianMs: number;
  /** The first failure, as the server answered it. */
  failure: string | undefined;
}

const SAMPLE = 5;
const WAIT_S = 5;

/** Asks the first few agents `ping` through the server (admin token), one at a time: each answers with the revision it has. */
export async function probeTunnels(api: FleetApi, org: string, agents: readonly AgentIdentity[], head: number): Promise<TunnelProbe> {
  const latencies: number[] = [];
  let failure: string | undefined;
  const sample = agents.slice(0, SAMPLE);
  for (const a of sample) {
    const res = await api.request('POST', `${paths.deviceRpc(org, a.deviceId, AGENT_METHODS.ping)}?${QUERY.wait}=${WAIT_S}`, {});
    let ok = false;
    if (res.status === 200) {
      const v = JSON.parse(res.body) as { pong?: unknown; revision?: unknown };
      ok = v.pong === true && v.revision === head;
      if (!ok) failure ??= `answered ${res.body.slice(0, 200)} (head ${head})`;
    } else failure ??= `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
    if (ok) latencies.push(res.doneAt - res.sentAt);
  }
  return { asked: sample.length, answered: latencies.length, medianMs: median(latencies), failure };
}
