/**
 * The STUN responder every replica runs (docs/protocol.md "STUN"): RFC 5389
 * Binding requests on two UDP ports, answered with the address each request
 * came from.
 */
export { answerStun, type StunAnswer, type StunOutcome } from './answer.js';
export { StunMetrics, type StunPortRole, type StunResult } from './stun-metrics.js';
export { startStunServer, StunStartError, type StunServer, type StunServerOptions } from './stun-server.js';
export { startStunFromSettings } from './from-settings.js';
