import type { FleetplaneClient } from '../../client/index.js';
import type { CtlArgs } from './args.js';
import type { Output, Writable } from './output.js';
import { UsageError } from './usage.js';

/** What every ctl command gets. */
export interface CtlContext {
  client: FleetplaneClient;
  args: CtlArgs;
  out: Output;
  stderr: Writable;
  signal: AbortSignal | undefined;
}

export function orgOf(ctx: CtlContext): string {
  const org = ctx.args.values.org;
  if (org === undefined || org === '') throw new UsageError('--org is required for this command');
  return org;
}
