/**
 * The layout of the agent's informer state file: a header line (format
 * version, whom the state belongs to, the payload's length and SHA-256),
 * then the payload line (the SDK's InformersState as JSON). The header is
 * read and checked before the payload is parsed; the digest catches a file
 * that still parses but isn't what was written.
 */
import { createHash } from 'node:crypto';
import { parseInformersState, type InformersState } from '../../client/index.js';

export const INFORMER_STATE_FORMAT = 'fleetplane-informer-state';
/** Raise on any change of the layout or of what the payload means: older files are then ignored. */
export const INFORMER_STATE_VERSION = 1;

/** Whom a state belongs to: a file of another server or organization is not used. */
export interface InformerStateOwner {
  server: string;
  organizationId: string;
}

interface Header {
  format: typeof INFORMER_STATE_FORMAT;
  version: number;
  server: string;
  organization_id: string;
  saved_at: string;
  payload_bytes: number;
  payload_sha256: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The file's content for `state`. */
export function encodeInformerState(state: InformersState, owner: InformerStateOwner, savedAt: Date): string {
  const payload = JSON.stringify(state);
  const header: Header = {
    format: INFORMER_STATE_FORMAT,
    version: INFORMER_STATE_VERSION,
    server: owner.server,
    organization_id: owner.organizationId,
    saved_at: savedAt.toISOString(),
    payload_bytes: Buffer.byteLength(payload, 'utf8'),
    payload_sha256: sha256(payload),
  };
  // JSON.stringify escapes newlines inside strings, so the first '\n' ends the header.
  return `${JSON.stringify(header)}\n${payload}\n`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The state in `text`, or why it can't be used: not this format or
 * version, another server or organization, a payload that doesn't match
 * its digest, doesn't parse, or isn't an InformersState.
 */
export function decodeInformerState(text: string, owner: InformerStateOwner): { state: InformersState; savedAt: string } | { problem: string } {
  const newline = text.indexOf('\n');
  if (newline < 0) return { problem: 'no header line' };
  const header = parseJson(text.slice(0, newline));
  if (typeof header !== 'object' || header === null) return { problem: 'the header is not a JSON object' };
  const h = header as Partial<Record<keyof Header, unknown>>;
  if (h.format !== INFORMER_STATE_FORMAT) return { problem: 'not an informer state file' };
  if (h.version !== INFORMER_STATE_VERSION) return { problem: `format version ${String(h.version)}, expected ${INFORMER_STATE_VERSION}` };
  if (h.server !== owner.server) return { problem: `saved for server ${String(h.server)}, this agent uses ${owner.server}` };
  if (h.organization_id !== owner.organizationId) return { problem: `saved for organization ${String(h.organization_id)}, this agent is in ${owner.organizationId}` };
  if (typeof h.saved_at !== 'string' || typeof h.payload_bytes !== 'number' || typeof h.payload_sha256 !== 'string') {
    return { problem: 'the header lacks saved_at, payload_bytes or payload_sha256' };
  }
  const payload = text.slice(newline + 1).replace(/\n$/, '');
  if (Buffer.byteLength(payload, 'utf8') !== h.payload_bytes || sha256(payload) !== h.payload_sha256) {
    return { problem: 'the payload does not match its digest (truncated or altered)' };
  }
  const parsed = parseInformersState(parseJson(payload));
  if ('problem' in parsed) return { problem: `the payload is not an informers state: ${parsed.problem}` };
  return { state: parsed.state, savedAt: h.saved_at };
}
