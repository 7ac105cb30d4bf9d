/**
 * The `render` dataplane: needs no privileges. It writes the desired state as
 * files into the state directory instead of applying it.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApplyResult, Dataplane, DataplaneDescription } from './dataplane.js';
import { describeDesired } from './describe.js';
import { isInterfaceName, type DesiredDataplane } from './desired-state.js';
import { DataplaneAbortedError, DataplaneError } from './errors.js';
import { renderNftables, NFTABLES_CONF_FILE } from './render-nftables.js';
import { assertOwnTableOnly } from './nft-own-table.js';
import { renderWireGuard, WIREGUARD_CONF_FILE } from './render-wireguard.js';
import { writeFileIfChanged } from './atomic-file.js';
import { createSerializer, type Serializer } from './serializer.js';

export interface RenderDataplaneOptions {
  /** Directory for `wireguard.conf` and `nftables.conf`; created (0700) if missing. */
  stateDir: string;
  interfaceName: string;
}

/** Both files are 0600: wireguard.conf holds the private key. */
const FILE_MODE = 0o600;

export interface RenderedFiles {
  wireguard: string;
  nftables: string;
}

/**
 * Writes the two files into `stateDir` (created 0700 if missing), each
 * only when its content changes; returns what was written. `nftables` is
 * checked first (ForeignRulesetError, nothing written): the file is made
 * to be fed to `nft -f`, so it must touch only the agent's table too.
 */
export async function writeRenderedFiles(stateDir: string, files: RenderedFiles): Promise<string[]> {
  assertOwnTableOnly(files.nftables);
  const actions: string[] = [];
  try {
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    if (await writeFileIfChanged(join(stateDir, WIREGUARD_CONF_FILE), files.wireguard, FILE_MODE)) actions.push(`wrote ${WIREGUARD_CONF_FILE}`);
    if (await writeFileIfChanged(join(stateDir, NFTABLES_CONF_FILE), files.nftables, FILE_MODE)) actions.push(`wrote ${NFTABLES_CONF_FILE}`);
  } catch (error) {
    throw new DataplaneError('render', `writing into ${stateDir} failed`, { cause: error });
  }
  return actions;
}

export class RenderDataplane implements Dataplane {
  readonly mode = 'render' as const;
  private readonly serialize: Serializer = createSerializer();
  private last: DesiredDataplane | null = null;
  private appliedAt: Date | null = null;

  constructor(private readonly options: RenderDataplaneOptions) {
    if (!isInterfaceName(options.interfaceName)) {
      throw new DataplaneError('validate', `invalid interface name ${JSON.stringify(options.interfaceName)}`);
    }
  }

  get wireguardPath(): string {
    return join(this.options.stateDir, WIREGUARD_CONF_FILE);
  }

  get nftablesPath(): string {
    return join(this.options.stateDir, NFTABLES_CONF_FILE);
  }

  /** Writes each file only when its content changes; `changed` says whether any was written. */
  apply(desired: DesiredDataplane, signal?: AbortSignal): Promise<ApplyResult> {
    return this.serialize(async () => {
      if (signal?.aborted) throw new DataplaneAbortedError({ cause: signal.reason });
      if (desired.interface.name !== this.options.interfaceName) {
        throw new DataplaneError('validate', `desired interface ${desired.interface.name} is not ${this.options.interfaceName}`);
      }
      let files: RenderedFiles;
      try {
        files = { wireguard: renderWireGuard(desired), nftables: renderNftables(desired) };
      } catch (error) {
        throw new DataplaneError('render', `rendering failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      const actions = await writeRenderedFiles(this.options.stateDir, files);
      this.last = desired;
      this.appliedAt = new Date();
      return { changed: actions.length > 0, actions };
    });
  }

  /** Removes the two rendered files. */
  cleanup(): Promise<void> {
    return this.serialize(async () => {
      try {
        await rm(this.wireguardPath, { force: true });
        await rm(this.nftablesPath, { force: true });
      } catch (error) {
        throw new DataplaneError('cleanup', `removing rendered files from ${this.options.stateDir} failed`, { cause: error });
      }
      this.last = null;
      this.appliedAt = null;
    });
  }

  describe(): Promise<DataplaneDescription> {
    return Promise.resolve(describeDesired('render', this.options.interfaceName, this.last, this.appliedAt));
  }
}
