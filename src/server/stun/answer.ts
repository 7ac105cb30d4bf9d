import {
  decodeStunMessage,
  encodeBindingError,
  encodeBindingSuccess,
  STUN_ATTRIBUTE,
  STUN_ERROR_UNKNOWN_ATTRIBUTE,
  STUN_MESSAGE_TYPE,
  stunAddress,
  type StunAttribute,
} from '../../protocol/index.js';

/** What became of one datagram: a success response, an error response, or nothing. */
export type StunOutcome = 'answered' | 'refused' | 'ignored';

export interface StunAnswer {
  outcome: StunOutcome;
  /** The datagram to send back to the sender (absent when `ignored`). */
  reply?: Uint8Array;
}

/** USERNAME and MESSAGE-INTEGRITY: credentials this server does not ask for, so it does not check them either. */
const IGNORED_REQUIRED = new Set<number>([0x0006, 0x0008]);

/**
 * Answers one datagram received from `from`: a Binding request gets its
 * success response (or a 420 when it needs an attribute this server does not
 * implement, such as a CHANGE-REQUEST that asks for another address or port);
 * anything else is ignored. Never throws, whatever the bytes. The reply always
 * goes to the sender: an RFC 3489 RESPONSE-ADDRESS is never honoured.
 */
export function answerStun(datagram: Uint8Array, from: { address: string; port: number }): StunAnswer {
  const request = decodeStunMessage(datagram);
  if (!request || request.type !== STUN_MESSAGE_TYPE.bindingRequest) return { outcome: 'ignored' };
  const mapped = stunAddress(from.address, from.port);
  if (!mapped) return { outcome: 'ignored' };
  const unknown = unknownRequired(request.attributes);
  if (unknown.length > 0) {
    return { outcome: 'refused', reply: encodeBindingError(request, STUN_ERROR_UNKNOWN_ATTRIBUTE, 'Unknown Attribute', unknown) };
  }
  return { outcome: 'answered', reply: encodeBindingSuccess(request, mapped) };
}

/** Comprehension-required attribute types (below 0x8000) this server can't honour, each once. */
function unknownRequired(attributes: readonly StunAttribute[]): number[] {
  const out = new Set<number>();
  for (const a of attributes) {
    if (a.type >= 0x8000 || IGNORED_REQUIRED.has(a.type)) continue;
    // A CHANGE-REQUEST asking for no change (both flags clear) is what old clients send first: it needs nothing.
    if (a.type === STUN_ATTRIBUTE.changeRequest && a.value.length === 4 && a.value.every((b) => b === 0)) continue;
    out.add(a.type);
  }
  return [...out];
}
