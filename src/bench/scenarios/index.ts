import type { Scenario } from '../scenario.js';
import { rawFloor } from './raw-floor.js';
import { fanout } from './fanout.js';
import { idleMemory } from './idle-memory.js';
import { queries } from './queries.js';
import { pollingBaseline } from './polling-baseline.js';
import { catchUp } from './catch-up.js';
import { writeThroughput } from './write-throughput.js';
import { fanoutReplicas, fanoutWorkers } from './fanout-scale-out.js';
import { enroll } from './enroll.js';
import { fleet } from './fleet.js';
import { storage } from './storage.js';
import { dashboard } from './dashboard.js';
import { relay } from './relay.js';

/** Every scenario, in the order the default set runs them. */
export const SCENARIOS: readonly Scenario[] = [rawFloor, fanout, idleMemory, queries, pollingBaseline, catchUp, writeThroughput, fanoutWorkers, fanoutReplicas, enroll, fleet, storage, dashboard, relay];
