/**
 * Names used by the signal bus drivers and the agent registry: PostgreSQL
 * NOTIFY channels and Redis keys. Nothing else may spell them.
 */
export const BUS = {
  /** PostgreSQL NOTIFY channel carrying change signals. */
  pgChannel: 'fleetplane_signals',
  /** Redis pub/sub channel carrying change signals. */
  redisChannel: 'fleetplane:signals',
  /** Signal name prefix for an organization's changes: `org:<uuid>`. */
  orgSignalPrefix: 'org:',
  /** Signal name prefix for an agent connecting anywhere: `agent:<device uuid>`. */
  agentSignalPrefix: 'agent:',
} as const;

export const REDIS_KEYS = {
  /** Hash per device: field = replica id, value = expiry (ms since epoch). */
  agentRegistry: (deviceId: string) => `fleetplane:agent:${deviceId}`,
} as const;

export function orgSignal(orgId: string): string {
  return `${BUS.orgSignalPrefix}${orgId}`;
}

export function agentSignal(deviceId: string): string {
  return `${BUS.agentSignalPrefix}${deviceId}`;
}
