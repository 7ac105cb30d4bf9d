/**
 * Independent checks of rendered files for the fuzz test: a strict INI
 * reading of wireguard.conf (only the keys fleetplane writes, exactly the
 * peers given), a statement-level reading of nftables.conf (nothing but the
 * own table), and the real tools where the machine has them: `wg-quick
 * strip` then `wg setconf` on a wireguard-go interface, `nft -c -f`, and
 * `nft -f` in a network namespace that holds another table, which must
 * come out untouched.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DesiredDataplane } from '../../../src/agent/dataplane/index.js';
import { IN_CI, which } from '../../support/binaries.js';

const run = promisify(execFile);

const INTERFACE_KEYS = new Set(['PrivateKey', 'Address', 'ListenPort', 'MTU', 'DNS', 'Table', 'PostUp']);
const PEER_KEYS = new Set(['PublicKey', 'AllowedIPs', 'Endpoint', 'PersistentKeepalive']);
const ROUTE = /^ip route replace [0-9a-f.:]+\/[0-9]{1,3}(?: via [0-9a-f.:]+)? dev %i$/;

/** Problems of a rendered wireguard.conf; empty when it is what fleetplane may write for `desired`. */
export function wireGuardProblems(text: string, desired: DesiredDataplane): string[] {
  const problems: string[] = [];
  if (!text.endsWith('\n')) problems.push('no final line break');
  const lines = text.slice(0, -1).split('\n');
  let section: 'none' | 'interface' | 'peer' = 'none';
  let interfaces = 0;
  const peerKeys: string[] = [];
  const postUps: string[] = [];
  for (const [i, line] of lines.entries()) {
    const at = `line ${i + 1} ${JSON.stringify(line)}`;
    if (!/^[\x20-\x7e]*$/.test(line)) problems.push(`${at}: not printable ASCII`);
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (section === 'peer' && !/^# [A-Za-z0-9_.:-]* \([0-9a-f-]{36}\)$/.test(line)) problems.push(`${at}: not a peer comment`);
      continue;
    }
    if (line === '[Interface]') {
      interfaces++;
      section = 'interface';
      continue;
    }
    if (line === '[Peer]') {
      section = 'peer';
      peerKeys.push('');
      continue;
    }
    const m = /^([A-Za-z]+) = (.*)$/.exec(line);
    if (!m || section === 'none') {
      problems.push(`${at}: not a key of a section`);
      continue;
    }
    const [, key = '', value = ''] = m;
    if (section === 'interface') {
      if (!INTERFACE_KEYS.has(key)) problems.push(`${at}: key ${key} is not allowed in [Interface]`);
      if (key === 'Table' && value !== 'off') problems.push(`${at}: Table is not off`);
      if (key === 'PostUp') {
        if (!ROUTE.test(value)) problems.push(`${at}: PostUp is not a route command`);
        postUps.push(value);
      }
    } else {
      if (!PEER_KEYS.has(key)) problems.push(`${at}: key ${key} is not allowed in [Peer]`);
      if (key === 'PublicKey') peerKeys[peerKeys.length - 1] = value;
    }
  }
  if (interfaces !== 1) problems.push(`${interfaces} [Interface] sections`);
  if (postUps.length !== desired.routes.length) problems.push(`${postUps.length} PostUp lines for ${desired.routes.length} routes`);
  const given = desired.peers.map((p) => p.public_key);
  if (JSON.stringify(peerKeys) !== JSON.stringify(given)) problems.push(`peers ${JSON.stringify(peerKeys)}, given ${JSON.stringify(given)}`);
  return problems;
}

const FORBIDDEN_WORDS = /\b(?:flush|ruleset|include|define|redefine|undefine|add|create|insert|replace|reset|rename|destroy|list|export|import|monitor)\b/;
/** An IPv6 address, range end or prefix: its hex groups may spell a word (`::add:0:0/96`) that is not one. */
const IPV6_TEXT = /(?<![\w:])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:\.[0-9.]+)?(?:\/[0-9]{1,3})?(?![\w:])/g;

/** Problems of a rendered nftables.conf; empty when every statement is on table `inet fleetplane`. */
export function nftablesProblems(text: string): string[] {
  const problems: string[] = [];
  if (!text.endsWith('\n')) problems.push('no final line break');
  const lines = text.slice(0, -1).split('\n');
  let depth = 0;
  let statements = 0;
  for (const [i, line] of lines.entries()) {
    const at = `line ${i + 1} ${JSON.stringify(line)}`;
    if (!/^[\t\x20-\x7e]*$/.test(line)) problems.push(`${at}: not printable ASCII`);
    if (/^\s*#/.test(line)) {
      if (statements > 0) problems.push(`${at}: a comment after the first statement`);
      continue;
    }
    if (line.trim() === '') continue;
    statements++;
    if (line.includes('#')) problems.push(`${at}: # inside a statement`);
    if (FORBIDDEN_WORDS.test(line.replace(IPV6_TEXT, ''))) problems.push(`${at}: a command word`);
    for (const m of line.matchAll(/\btable\b/g)) {
      if (line.slice((m.index ?? 0) + 5, (m.index ?? 0) + 21) !== ' inet fleetplane') problems.push(`${at}: another table`);
    }
    if (line.includes(';') && !/^\t\ttype (?:filter hook (?:input|output|forward) priority filter|nat hook postrouting priority srcnat); policy accept;$/.test(line)) {
      problems.push(`${at}: ; outside a base chain's hook line`);
    }
    if (depth === 0 && !/^(?:table inet fleetplane|delete table inet fleetplane|table inet fleetplane \{)$/.test(line)) {
      problems.push(`${at}: a top-level statement not on the own table`);
    }
    for (const ch of line) {
      if (ch === '{') depth++;
      if (ch === '}') depth--;
      if (depth < 0) problems.push(`${at}: closes more than it opened`);
    }
    if (depth > 3) problems.push(`${at}: nested deeper than table, chain, set`);
  }
  if (depth !== 0) problems.push(`unbalanced braces (depth ${depth} at the end)`);
  return problems;
}

/** Whether `tools` can be used here (root for the namespace); loud when not, and a failure in CI. */
export function toolsUsable(what: string, tools: readonly string[]): boolean {
  const missing = tools.filter((t) => which(t) === undefined);
  const root = process.getuid?.() === 0;
  if (missing.length === 0 && root) return true;
  const why = missing.length > 0 ? `${missing.join(', ')} not installed` : 'not running as root';
  const msg = `*** ${what}: ${why}; that check of the rendered files is SKIPPED. ***`;
  if (IN_CI) throw new Error(msg);
  console.warn(msg);
  return false;
}

const KEEP_TABLE = 'table ip keep {\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\ttcp dport 9 accept\n\t}\n}\n';

/** A network namespace with another table in it and a wireguard-go interface: the tools check files there. */
export class ToolBench {
  readonly ns: string;
  readonly wg: string;
  #dir = '';
  #keep = '';

  constructor(tag: string) {
    this.ns = `fpfz-${tag}`;
    this.wg = `fpfz${tag}`.slice(0, 15);
  }

  async start(withWireGuard: boolean): Promise<void> {
    this.#dir = await mkdtemp(join(tmpdir(), 'fp-render-fuzz-'));
    await run('ip', ['netns', 'add', this.ns]);
    await this.#file('keep.nft', KEEP_TABLE);
    await this.#ns('nft', ['-f', join(this.#dir, 'keep.nft')]);
    this.#keep = (await this.#ns('nft', ['list', 'table', 'ip', 'keep'])).stdout;
    if (withWireGuard) await run('ip', ['netns', 'exec', this.ns, 'wireguard-go', this.wg], { env: { ...process.env, LOG_LEVEL: 'silent' } });
  }

  async stop(): Promise<void> {
    const { stdout } = await run('ip', ['netns', 'pids', this.ns]).catch(() => ({ stdout: '' }));
    // Whatever runs in this namespace is the wireguard-go this bench started.
    for (const pid of stdout.split(/\s+/).filter((p) => p !== '')) process.kill(Number(pid), 'SIGKILL');
    await run('ip', ['netns', 'del', this.ns]).catch((err: unknown) => console.warn(`removing namespace ${this.ns}: ${String(err)}`));
    await rm(`/var/run/wireguard/${this.wg}.sock`, { force: true });
    if (this.#dir !== '') await rm(this.#dir, { recursive: true, force: true });
  }

  /** `nft -c -f`, then `nft -f` for real: afterwards the namespace has table `ip keep` as it was and `inet fleetplane`, nothing else. */
  async nftProblems(text: string): Promise<string[]> {
    const file = await this.#file('fleetplane.nft', text);
    let ruleset: string;
    // One process per text, not three: at about a hundred texts a run, starting processes is most of this test's time.
    try {
      ({ stdout: ruleset } = await this.#ns('sh', ['-c', 'nft -c -f "$1" && nft -f "$1" && nft list ruleset', 'sh', file]));
    } catch (err) {
      return [`nft refused it: ${String(err)}`];
    }
    const tables = ruleset.split('\n').filter((l) => l.startsWith('table ')).sort();
    const problems: string[] = [];
    if (JSON.stringify(tables) !== JSON.stringify(['table inet fleetplane {', 'table ip keep {'])) problems.push(`tables after loading: ${JSON.stringify(tables)}`);
    if (!ruleset.includes(this.#keep)) problems.push('table ip keep changed');
    return problems;
  }

  /** `wg-quick strip` (the wg-quick keys), then `wg setconf` (every WireGuard key and value) on the bench's interface. */
  async wireGuardProblems(text: string): Promise<string[]> {
    const file = await this.#file(`${this.wg}.conf`, text);
    try {
      await run('sh', ['-c', 'wg-quick strip "$1" > "$2" && wg setconf "$3" "$2"', 'sh', file, join(this.#dir, 'stripped.conf'), this.wg]);
      return [];
    } catch (err) {
      return [`wg-quick strip | wg setconf refused it: ${String(err)}`];
    }
  }

  async #file(name: string, content: string): Promise<string> {
    const path = join(this.#dir, name);
    await writeFile(path, content, { mode: 0o600 });
    return path;
  }

  #ns(command: string, args: string[]): Promise<{ stdout: string }> {
    return run('ip', ['netns', 'exec', this.ns, command, ...args]);
  }
}
