/** The audit log (docs/protocol.md "Audit log"): who changed what, recorded in the transaction of the change. */
export { recordAudit, insertAudit, MissingAuditScopeError, type AuditRecord } from './record.js';
export { runAudited, currentScope, boundedUserAgent, SYSTEM_SCOPE, type AuditScope } from './scope.js';
export { fieldChanges, redact, redactText, auditValue, isCredentialName, type FieldChanges } from './changes.js';
export { listAudit, type AuditSelection } from './query.js';
export { pruneAudit, type RetentionRound } from './retention.js';
export { DeniedLimiter, DEFAULT_DENIED_LIMITS, type DeniedLimits, type DeniedVerdict } from './denied-limiter.js';
