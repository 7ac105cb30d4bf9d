import type { ScenarioFlag } from '../scenario.js';
import type { StorageName } from '../server/restartable-server.js';

/** The `fleet` scenario's settings, from its flags. */
export interface FleetOptions {
  agents: number[];
  storages: StorageName[];
  idleSeconds: number;
  /** ACK modes, in the order their change loops run: (c) tunnel, (f) put. */
  acks: ('tunnel' | 'put')[];
}

/** The quick default: one size, enough to see every figure (the targets are stated for 10,000). */
export const DEFAULT_AGENTS = [1_000];
export const DEFAULT_IDLE_SECONDS = 60;
const STORAGES: readonly StorageName[] = ['embedded', 'postgresql'];
const ACKS: readonly ('tunnel' | 'put')[] = ['tunnel', 'put'];
const MAX_AGENTS = 30_000;

function agentList(v: string): number[] {
  return v.split(',').map((x) => Number(x.trim().replace(/_/g, '')));
}

export const FLEET_FLAGS: readonly ScenarioFlag[] = [
  {
    name: '--agents',
    value: 'LIST',
    help: `simulated agents, e.g. 1000,5000,10000 (default ${DEFAULT_AGENTS.join(',')})`,
    check: (v) => (agentList(v).every((n) => Number.isInteger(n) && n >= 10 && n <= MAX_AGENTS) ? undefined : `a comma-separated list of integers from 10 to ${MAX_AGENTS}`),
  },
  {
    name: '--storage',
    value: 'LIST',
    help: 'embedded (the default storage: embedded PostgreSQL in a data directory), postgresql (a throwaway PostgreSQL 15 cluster) or both (default embedded,postgresql)',
    check: (v) => (v.split(',').every((s) => (STORAGES as readonly string[]).includes(s.trim())) ? undefined : `a comma-separated list of ${STORAGES.join(', ')}`),
  },
  {
    name: '--ack',
    value: 'LIST',
    help: 'ACK modes for the change loops, in order: tunnel (c), put (f) (default tunnel,put)',
    check: (v) => (v.split(',').every((s) => (ACKS as readonly string[]).includes(s.trim())) ? undefined : `a comma-separated list of ${ACKS.join(', ')}`),
  },
  {
    name: '--idle',
    value: 'SECONDS',
    help: `idle window with N agents connected (default ${DEFAULT_IDLE_SECONDS})`,
    check: (v) => (Number.isInteger(Number(v)) && Number(v) >= 5 && Number(v) <= 600 ? undefined : 'an integer from 5 to 600'),
  },
];

export function fleetOptions(flags: Record<string, string>): FleetOptions {
  const agents = flags['--agents'];
  const storage = flags['--storage'];
  const idle = flags['--idle'];
  const ack = flags['--ack'];
  return {
    agents: agents === undefined ? DEFAULT_AGENTS : agentList(agents),
    storages: storage === undefined ? [...STORAGES] : STORAGES.filter((s) => storage.split(',').map((x) => x.trim()).includes(s)),
    idleSeconds: idle === undefined ? DEFAULT_IDLE_SECONDS : Number(idle),
    acks: ack === undefined ? [...ACKS] : [...new Set(ack.split(',').map((x) => x.trim()))].filter((x): x is 'tunnel' | 'put' => (ACKS as readonly string[]).includes(x)),
  };
}
