import { AUDIT_REDACTED, AUDIT_VALUE_MAX_BYTES, SECRET_PREFIX, type AuditChange, type AuditTruncated } from '../../protocol/index.js';
import { changedFields } from '../../util/same-json.js';

/** What an update's audit entry records of it: `details.fields` and `details.changes` (docs/protocol.md "Audit log"). */
export type FieldChanges = {
  /** The changed top-level fields, sorted. */
  readonly fields: string[];
  /** Each changed field's value before and after: redacted, and cut to `AUDIT_VALUE_MAX_BYTES`. */
  readonly changes: Record<string, AuditChange>;
};

// Word-wise, so `public_key` and `description` pass while `secret_hash`, `password` or `device_token` do not.
const CREDENTIAL_WORDS = new Set(['secret', 'secrets', 'password', 'passwords', 'passwd', 'passphrase', 'token', 'tokens', 'hash', 'credential', 'credentials', 'privatekey']);
// Names of the credential's metadata (`token_id`, `expires_at`), not its value.
const METADATA_SUFFIXES = new Set(['id', 'ids', 'at', 'kind', 'count']);

// Names repeat: a policy apply's entry redacts thousands of rules' few field names, and splitting each
// name into words again was a tenth of the apply's CPU. Past the limit names are judged uncached.
const KNOWN_NAMES_LIMIT = 4_096;
const knownNames = new Map<string, boolean>();

/** Whether a field's name says its value is a credential. Only identifier-like names: a map's keys (`tag:token`) are data. */
export function isCredentialName(name: string): boolean {
  const known = knownNames.get(name);
  if (known !== undefined) return known;
  const verdict = judgeName(name);
  if (knownNames.size < KNOWN_NAMES_LIMIT) knownNames.set(name, verdict);
  return verdict;
}

function judgeName(name: string): boolean {
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name)) return false;
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  const last = words[words.length - 1];
  if (last === undefined || METADATA_SUFFIXES.has(last)) return false;
  return words.some((w, i) => CREDENTIAL_WORDS.has(w) || (w === 'private' && words[i + 1] === 'key'));
}

// A secret this server issues, pasted anywhere in a string (a description holding a token): prefix and 20+ base64url characters.
const ISSUED_SECRET = new RegExp(`(${Object.values(SECRET_PREFIX).join('|')})[A-Za-z0-9_-]{20,}`);

/** `text`, or `AUDIT_REDACTED` when it holds a secret this server issues (a description a token was pasted into). */
export function redactText(text: string): string {
  return ISSUED_SECRET.test(text) ? AUDIT_REDACTED : text;
}

/** `value` with every credential in it replaced by `AUDIT_REDACTED`: values under credential-like names, and strings holding an issued secret. */
export function redact(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redact);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isCredentialName(k) && v !== null && v !== undefined ? AUDIT_REDACTED : redact(v);
  return out;
}

/** `value` as an entry keeps it: redacted, then a marker if its JSON is longer than `AUDIT_VALUE_MAX_BYTES`; undefined as null. */
export function auditValue(field: string, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (isCredentialName(field)) return AUDIT_REDACTED;
  const kept = redact(value);
  const bytes = Buffer.byteLength(JSON.stringify(kept), 'utf8');
  if (bytes <= AUDIT_VALUE_MAX_BYTES) return kept;
  const marker: AuditTruncated = { truncated: true, bytes };
  return marker;
}

/** The fields that differ between two versions of an object, with their values before and after as an entry keeps them. */
export function fieldChanges(before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>): FieldChanges {
  const fields = changedFields(before, after);
  const changes: Record<string, AuditChange> = {};
  for (const f of fields) changes[f] = { from: auditValue(f, before[f]), to: auditValue(f, after[f]) };
  return { fields, changes };
}
