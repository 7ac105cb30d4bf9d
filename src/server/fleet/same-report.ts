import type { DeviceStatusInput } from '../../protocol/index.js';

type Field = DeviceStatusInput[keyof DeviceStatusInput];

/** Whether two objects of primitive fields (a peer's path) have the same fields with the same values, key order aside. */
function sameFlat(a: object, b: object): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    keys++;
    if (x[k] !== y[k] || !Object.hasOwn(y, k)) return false;
  }
  for (const k in y) if (Object.hasOwn(y, k)) keys--;
  return keys === 0;
}

function sameItem(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && sameFlat(a, b);
}

function sameField(a: Field, b: Field): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameItem(a[i], b[i])) return false;
  return true;
}

/**
 * Whether two status reports say the same thing: the same fields with equal
 * values, key order aside (peers compared field by field, in order). A
 * tunnel report equal to the last one written costs no write; comparing in
 * place, not by serializing, keeps each of a fleet's ACKs (and their up to
 * 1,024 peers) from leaving a string behind for the garbage collector.
 */
export function sameReport(a: DeviceStatusInput, b: DeviceStatusInput): boolean {
  let keys = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    keys++;
    const key = k as keyof DeviceStatusInput;
    if (!sameField(a[key], b[key])) return false;
  }
  for (const k in b) if (Object.hasOwn(b, k)) keys--;
  return keys === 0;
}
