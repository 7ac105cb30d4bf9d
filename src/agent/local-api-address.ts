/**
 * The local API's address file in a state directory
 * (AGENT_LOCAL_ADDRESS_FILE in src/protocol/agent-local.ts): the agent
 * writes it once its local API listens and removes it when it stops; the
 * API's clients read it to find the port.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AGENT_LOCAL_ADDRESS_FILE, agentLocalUrl, formatAgentLocalAddress, parseAgentLocalAddress, type AgentLocalAddress } from '../protocol/index.js';
import { writeFileIfChanged } from './dataplane/atomic-file.js';

// Not a secret: any local user can find a loopback port anyway; the state directory's mode still applies.
const FILE_MODE = 0o644;

/** No address file in the state directory (no agent runs there), or one that doesn't hold an address. */
export class LocalApiAddressError extends Error {
  override readonly name = 'LocalApiAddressError';
}

/** The path of the address file in `stateDir`. */
export function localApiAddressPath(stateDir: string): string {
  return join(stateDir, AGENT_LOCAL_ADDRESS_FILE);
}

/** Replaces the address file with `address`, atomically (a reader sees the old file or the new one, whole). */
export async function writeLocalApiAddress(stateDir: string, address: AgentLocalAddress): Promise<void> {
  await writeFileIfChanged(localApiAddressPath(stateDir), formatAgentLocalAddress(address), FILE_MODE);
}

/** Removes the address file; nothing to do when it is gone already. */
export async function removeLocalApiAddress(stateDir: string): Promise<void> {
  await rm(localApiAddressPath(stateDir), { force: true });
}

/**
 * Where the agent of `stateDir` serves its local API, and its base URL. Throws
 * LocalApiAddressError when the file is missing or malformed; other file
 * errors (e.g. EACCES) as they are.
 */
export async function readLocalApiAddress(stateDir: string): Promise<AgentLocalAddress & { url: string }> {
  const path = localApiAddressPath(stateDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') {
      throw new LocalApiAddressError(`${path} does not exist: is an agent running with --state-dir ${stateDir}?`, { cause: err });
    }
    throw err;
  }
  const address = parseAgentLocalAddress(text);
  if (address === undefined) throw new LocalApiAddressError(`${path} does not hold HOST:PORT: ${JSON.stringify(text.slice(0, 64))}`);
  return { ...address, url: agentLocalUrl(address) };
}
