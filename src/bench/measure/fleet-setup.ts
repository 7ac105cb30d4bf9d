import type { FleetApi } from '../http-api.js';
import type { FleetServer } from '../server/fleet-server.js';
import type { ServerProbe } from './fanout.js';

/** One organization with one device to change, named after the run. */
export async function orgWithDevice(api: FleetApi, label: string): Promise<{ org: string; deviceId: string; head: number }> {
  const org = await api.createOrganization(`${label}-${process.pid}-${Date.now().toString(36)}`);
  const device = await api.createDevice(org, `${label}-device`);
  return { org, deviceId: device.id, head: device.revision };
}

/** The probe of one server: CPU from /metrics (one process) or /proc (several); /metrics only when it is one process. */
export function serverProbe(server: FleetServer, api: FleetApi): ServerProbe {
  return {
    cpuSeconds: () => server.cpuSeconds(api),
    metrics: async () => (server.multiProcess ? undefined : api.metricsText()),
  };
}

/**
 * The probe of one server counting its whole process tree: the server and
 * the embedded PostgreSQL it started (and what that PostgreSQL's exited
 * backends used), from /proc at one clock tick's resolution; /metrics as
 * `serverProbe`'s.
 */
export function treeProbe(server: FleetServer, api: FleetApi): ServerProbe {
  return {
    cpuSeconds: async () => {
      const s = server.procStats();
      return s.cpuSeconds + s.reapedCpuSeconds;
    },
    metrics: async () => (server.multiProcess ? undefined : api.metricsText()),
  };
}

/** Several servers (replicas) seen as one: CPU summed over their process trees; no single /metrics. */
export function replicasProbe(servers: readonly FleetServer[]): ServerProbe {
  return {
    cpuSeconds: async () => servers.reduce((n, s) => n + s.procStats().cpuSeconds, 0),
    metrics: async () => undefined,
  };
}
