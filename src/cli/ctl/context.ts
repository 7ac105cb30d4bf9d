import type { FleetplaneClient } from '../../client/index.js';
import type { Flags } from './argv.js';
import type { Output, Writable } from './output.js';

/** An organization as a command refers to it: its id, and its name when known. */
export interface OrgRef {
  id: string;
  name: string | undefined;
}

/** What every ctl command gets. */
export interface LocalContext {
  flags: Flags;
  out: Output;
  stderr: Writable;
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C: watches end with exit code 0. */
  signal: AbortSignal | undefined;
  /** The config file's path (`--config`, FLEETPLANE_CONFIG or the XDG default). */
  configPath: string;
  cwd: string;
  /** What `-f -` reads. */
  stdin: AsyncIterable<string | Uint8Array>;
}

/** What commands that talk to a server get. */
export interface CtlContext extends LocalContext {
  client: FleetplaneClient;
  /**
   * The organization of `--org` (or the context's), resolved from a name
   * once; a usage error when none was given.
   */
  org(): Promise<OrgRef>;
}

/** "acme", or the id when the name is unknown. */
export function orgLabel(org: OrgRef): string {
  return org.name ?? org.id;
}
