/**
 * The gate between what the server sent and what the agent applies: every
 * object of a snapshot (watch caches, a relist, a restored state file) is
 * checked against the protocol's schema. An object that fails is not used:
 * its last valid state (from an earlier snapshot) stands in for it, or it is
 * left out when there is none.
 */
import type { DeviceObject, Organization, SecurityGroup, WatchKind } from '../../protocol/index.js';
import { checkDevice, checkOrganization, checkSecurityGroup, shownText, type Check, type CheckResult } from '../received/index.js';
import type { Snapshot } from './snapshot.js';

/** An object the server sent that doesn't match the protocol's schema. */
export interface RejectedObject {
  kind: WatchKind;
  /** Its `id` as sent, shown as printable ASCII (at most 64 characters). */
  id: string;
  /** Its `revision` when that is a number, else null. */
  revision: number | null;
  /** Where it fails its schema, e.g. `/network/mtu must be integer`. */
  problem: string;
  /** True: its last valid state is used instead; false: it is left out. */
  kept_previous: boolean;
}

/** The snapshot as the agent may use it; `snapshot` is undefined when the organization itself has no valid state. */
export interface Admitted {
  snapshot: Snapshot | undefined;
  rejected: RejectedObject[];
}

function field(raw: unknown, name: string): unknown {
  return typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined;
}

/** The last valid state of each object of one kind, and checks cached per received object. */
class KindGate<T extends { id: string }> {
  #valid = new Map<string, T>();
  /** Caches keep an object until it changes, so most objects of a snapshot were checked before. */
  #checked = new WeakMap<object, CheckResult<T>>();

  constructor(
    private readonly kind: WatchKind,
    private readonly check: Check<T>,
  ) {}

  admit(objects: readonly unknown[], rejected: RejectedObject[]): T[] {
    const next = new Map<string, T>();
    for (const raw of objects) {
      const result = this.#result(raw);
      if (result.ok) {
        next.set(result.value.id, result.value);
        continue;
      }
      const id = field(raw, 'id');
      const previous = typeof id === 'string' ? this.#valid.get(id) : undefined;
      if (previous) next.set(previous.id, previous);
      const revision = field(raw, 'revision');
      rejected.push({
        kind: this.kind,
        id: shownText(id ?? null),
        revision: typeof revision === 'number' && Number.isFinite(revision) ? revision : null,
        problem: result.problem,
        kept_previous: previous !== undefined,
      });
    }
    this.#valid = next;
    return [...next.values()];
  }

  #result(raw: unknown): CheckResult<T> {
    if (typeof raw !== 'object' || raw === null) return this.check(raw);
    let result = this.#checked.get(raw);
    if (!result) {
      result = this.check(raw);
      this.#checked.set(raw, result);
    }
    return result;
  }
}

/**
 * Admits snapshots one after another (each replaces what the previous one
 * left as the last valid states). Objects deleted from the organization
 * leave with the snapshot that no longer holds them.
 */
export class SnapshotAdmission {
  readonly #organizations = new KindGate<Organization>('organization', checkOrganization);
  readonly #devices = new KindGate<DeviceObject>('device', checkDevice);
  readonly #groups = new KindGate<SecurityGroup>('security-group', checkSecurityGroup);

  admit(snapshot: Snapshot): Admitted {
    const rejected: RejectedObject[] = [];
    const [organization] = this.#organizations.admit([snapshot.organization], rejected);
    const devices = this.#devices.admit(snapshot.devices, rejected);
    const securityGroups = this.#groups.admit(snapshot.securityGroups, rejected);
    return { snapshot: organization ? { ...snapshot, organization, devices, securityGroups } : undefined, rejected };
  }
}

/** One line for a status or a log: how many objects were rejected, and each (up to a few). */
export function rejectionSummary(rejected: readonly RejectedObject[]): string {
  const shown = rejected.slice(0, 8).map((r) => `${r.kind} ${r.id}${r.revision === null ? '' : ` (revision ${r.revision})`}: ${r.problem}`);
  const more = rejected.length > shown.length ? `; and ${rejected.length - shown.length} more` : '';
  return `rejected ${rejected.length} object${rejected.length === 1 ? '' : 's'} that do not match the protocol's schemas (their last valid state stays): ${shown.join('; ')}${more}`;
}
