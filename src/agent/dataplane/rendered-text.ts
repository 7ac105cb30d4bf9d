/**
 * Typed text for the files the agent renders (wireguard.conf,
 * nftables.conf). A value reaches a file only as a Token: made by a
 * function that checks the value is of its type (a UUID, an integer in its
 * range, a WireGuard key, an IP, a CIDR, ...) and writes it in its own
 * canonical form, or by `comment`, which keeps only a few harmless
 * characters. A Line is made only by the `line` tag from code literals and
 * Tokens, and it holds no line break whatever it is given. So no value,
 * whatever it holds and however a renderer is called, can start a line or
 * a statement of its own.
 */
import { FORMATS, Network } from '../../protocol/index.js';
import { canonicalEndpoint, formatInterval, formatIp, parseIp, rangeToInterval } from './addresses.js';
import { isInterfaceName } from './desired-state.js';

declare const TOKEN: unique symbol;
declare const LINE: unique symbol;

/** Text checked to be of its type; printable ASCII without line breaks. */
export type Token = string & { readonly [TOKEN]: true };

/** One line of a rendered file, without its line break. */
export type Line = string & { readonly [LINE]: true };

/** A value a renderer was given is not of its type: nothing is rendered. */
export class RenderValueError extends Error {
  override readonly name = 'RenderValueError';
  constructor(what: string, value: unknown) {
    super(`refusing to render ${what} ${shown(value)}`);
  }
}

/** The value as it may appear in an error message: printable ASCII, bounded. */
function shown(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
  const safe = text.replace(/[^\x20-\x7e]/g, '?');
  return safe.length > 80 ? `${safe.slice(0, 80)}...` : safe;
}

/** Printable ASCII and tabs: what every line of a rendered file is made of. */
const LINE_TEXT = /^[\t\x20-\x7e]*$/;

function token(text: string, pattern: RegExp, what: string, value: unknown): Token {
  if (!pattern.test(text)) throw new RenderValueError(what, value);
  return text as Token;
}

function stringOf(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new RenderValueError(what, value);
  return value;
}

/** A fixed text of the renderer itself: only a string literal type is accepted (not `string`). */
export function literal<S extends string>(text: string extends S ? never : S): Token {
  return token(text, LINE_TEXT, 'a literal', text);
}

/** An integer in `min..max`, in decimal. */
export function integer(value: unknown, min: number, max: number, what: string): Token {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) throw new RenderValueError(what, value);
  return token(String(value), /^-?[0-9]+$/, what, value);
}

/** A port, 0..65535. */
export function port(value: unknown, what = 'port'): Token {
  return integer(value, 0, 65535, what);
}

const MTU_MIN = Network.properties.mtu.minimum ?? 576;
const MTU_MAX = Network.properties.mtu.maximum ?? 9000;

/** An MTU in the range the protocol allows (`network.mtu`). */
export function mtu(value: unknown): Token {
  return integer(value, MTU_MIN, MTU_MAX, 'MTU');
}

export function uuid(value: unknown, what: string): Token {
  const text = stringOf(value, what);
  if (!FORMATS.uuid(text)) throw new RenderValueError(what, value);
  return token(text, /^[0-9a-f-]{36}$/, what, value);
}

/** A WireGuard key: 32 bytes, base64. */
export function wireGuardKey(value: unknown, what: string): Token {
  const text = stringOf(value, what);
  if (!FORMATS['wireguard-key'](text)) throw new RenderValueError(what, value);
  return token(text, /^[A-Za-z0-9+/]{43}=$/, what, value);
}

const ADDRESS_TEXT = /^[0-9a-f.:]+$/;

/** An IP address, written canonically. */
export function ip(value: unknown, what: string): Token {
  const parsed = parseIp(stringOf(value, what));
  if (!parsed) throw new RenderValueError(what, value);
  return token(formatIp(parsed), ADDRESS_TEXT, what, value);
}

function prefixed(value: unknown, what: string): { address: Token; prefix: Token; hostBits: boolean } {
  const text = stringOf(value, what);
  const slash = text.indexOf('/');
  const parsed = slash < 0 ? undefined : parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!parsed || !/^[0-9]{1,3}$/.test(prefixText)) throw new RenderValueError(what, value);
  const bits = parsed.family === 4 ? 32 : 128;
  const prefix = integer(Number(prefixText), 0, bits, what);
  const hostMask = (1n << BigInt(bits - Number(prefixText))) - 1n;
  return { address: token(formatIp(parsed), ADDRESS_TEXT, what, value), prefix, hostBits: (parsed.value & hostMask) !== 0n };
}

/** A CIDR (host bits clear), written canonically. */
export function cidr(value: unknown, what: string): Token {
  const { address, prefix, hostBits } = prefixed(value, what);
  if (hostBits) throw new RenderValueError(what, value);
  return token(`${address}/${prefix}`, /^[0-9a-f.:]+\/[0-9]+$/, what, value);
}

/** An interface address: an IP with the prefix length of its network (`100.64.0.2/16`). */
export function interfaceAddress(value: unknown, what: string): Token {
  const { address, prefix } = prefixed(value, what);
  return token(`${address}/${prefix}`, /^[0-9a-f.:]+\/[0-9]+$/, what, value);
}

/** `ip:port` or `[v6]:port`, written as `wg` prints it. */
export function endpoint(value: unknown, what: string): Token {
  const text = canonicalEndpoint(stringOf(value, what));
  if (text === undefined) throw new RenderValueError(what, value);
  return token(text, /^(?:[0-9.]+|\[[0-9a-f.:]+\]):[0-9]+$/, what, value);
}

/** An nftables set element: an IP, a CIDR or an `ip-ip` range, written as the firewall computation writes it. */
export function addressRange(value: unknown, what: string): Token {
  const interval = rangeToInterval(stringOf(value, what));
  if (!interval) throw new RenderValueError(what, value);
  return token(formatInterval(interval), /^[0-9a-f.:]+(?:\/[0-9]+|-[0-9a-f.:]+)?$/, what, value);
}

/** A Linux interface name (1..15 of `A-Z a-z 0-9 _ . -`). */
export function interfaceName(value: unknown): Token {
  const text = stringOf(value, 'interface name');
  if (!isInterfaceName(text)) throw new RenderValueError('interface name', value);
  return token(text, /^[A-Za-z0-9_.-]{1,15}$/, 'interface name', value);
}

/** One of a fixed set of words. */
export function oneOf<const W extends string>(value: unknown, words: readonly W[], what: string): Token {
  if (typeof value !== 'string' || !(words as readonly string[]).includes(value)) throw new RenderValueError(what, value);
  return token(value, /^[a-z0-9-]+$/, what, value);
}

/**
 * Free text (a hostname) for a comment: only `A-Z a-z 0-9 _ . : -` are
 * kept, every other character becomes `_`, at most 253 characters. Never
 * throws: a comment can be wrong, not dangerous.
 */
export function comment(value: unknown): Token {
  const text = typeof value === 'string' ? value : '';
  return token(text.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 253), /^[A-Za-z0-9_.:-]*$/, 'comment', value);
}

/** Tokens joined with a fixed separator. */
export function joined(tokens: readonly Token[], separator: ', ' | ',' | ' '): Token {
  return tokens.join(separator) as Token;
}

function joinTemplate(strings: TemplateStringsArray, tokens: readonly Token[]): string {
  let text = strings[0] ?? '';
  for (const [i, t] of tokens.entries()) text += `${t}${strings[i + 1] ?? ''}`;
  if (!LINE_TEXT.test(text)) throw new RenderValueError('a line', text);
  return text;
}

/** A Token from code literals and Tokens (part of a line), checked as `line` checks. */
export function phrase(strings: TemplateStringsArray, ...tokens: Token[]): Token {
  return joinTemplate(strings, tokens) as Token;
}

/**
 * A line from code literals and Tokens: `line\`MTU = ${mtu(x)}\``. Refuses
 * (RenderValueError) anything but printable ASCII and tabs, so even a value
 * forged into a Token can't add a line.
 */
export function line(strings: TemplateStringsArray, ...tokens: Token[]): Line {
  return joinTemplate(strings, tokens) as Line;
}

/** A file of lines, each ended by `\n`. */
export function fileOf(lines: readonly Line[]): string {
  return lines.map((l) => `${l}\n`).join('');
}
