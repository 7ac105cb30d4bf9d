import type { CreatedBy } from '../../../client/index.js';

/** What made a token or a registration key, in a table cell: `session <id>`, `token <id>`, `user <id>`, `admin`, or `unknown`. */
export function madeBy(c: CreatedBy): string {
  if (c.credential_kind === null) return 'unknown';
  if (c.credential_kind === 'admin') return 'admin';
  const id = c.credential_kind === 'user' ? c.user_id : c.credential_id;
  return `${c.credential_kind} ${id ?? ''}`.trim();
}
