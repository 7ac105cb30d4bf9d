import type { DeviceStatusInput } from '../../protocol/index.js';

type Field = DeviceStatusInput[keyof DeviceStatusInput];

function sameField(a: Field, b: Field): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Whether two status reports say the same thing: the same fields with equal
 * values, key order aside. A tunnel report equal to the last one written
 * costs no write; comparing in place, not by serializing, keeps each of a
 * fleet's ACKs from leaving a string behind for the garbage collector.
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
