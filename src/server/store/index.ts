export { Store } from './store.js';
export type { ChangeRow, StoredValue, ListParams, ListPage } from './objects.js';
export type { ChangeBatch, LiveObjects } from './changes.js';
export type { Principal } from './credentials.js';
export { resolveAdminToken, type AdminToken } from './admin-token.js';
export { hashSecret } from './secrets.js';
export { RevocationCursor } from './revocation-cursor.js';
export type { RecordedStatuses, StatusBatch, StatusWrite } from './device-status.js';
export { DEVICE_TOTAL_STATES, type DeviceTotals } from './device-totals.js';
