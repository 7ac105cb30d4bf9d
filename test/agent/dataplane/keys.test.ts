import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  generateKeyPair,
  InvalidKeyError,
  isWireGuardKey,
  publicKeyFromPrivate,
  samePrivateKey,
} from '../../../src/agent/dataplane/index.js';
import { which } from '../../support/binaries.js';

const hex = (h: string): string => Buffer.from(h, 'hex').toString('base64');

describe('WireGuard keys', () => {
  it('derives the RFC 7748 §6.1 public key', () => {
    const alice = hex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a');
    expect(publicKeyFromPrivate(alice)).toBe(hex('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a'));
  });

  it('generates distinct, clamped 32-byte keys whose public key matches', () => {
    const a = generateKeyPair();
    const b = generateKeyPair();
    expect(a.privateKey).not.toBe(b.privateKey);
    for (const k of [a.privateKey, a.publicKey]) expect(isWireGuardKey(k)).toBe(true);
    const raw = Buffer.from(a.privateKey, 'base64');
    expect(raw.length).toBe(32);
    expect((raw[0] ?? 1) & 7).toBe(0);
    expect((raw[31] ?? 0) & 0xc0).toBe(0x40);
    expect(publicKeyFromPrivate(a.privateKey)).toBe(a.publicKey);
  });

  it.runIf(which('wg') !== undefined)('agrees with `wg pubkey`', () => {
    const { privateKey, publicKey } = generateKeyPair();
    expect(execFileSync('wg', ['pubkey'], { input: `${privateKey}\n`, encoding: 'utf8' }).trim()).toBe(publicKey);
  });

  it('rejects text that is not 32 bytes of base64', () => {
    expect(isWireGuardKey('abc')).toBe(false);
    expect(isWireGuardKey(Buffer.alloc(31).toString('base64'))).toBe(false);
    expect(isWireGuardKey(Buffer.alloc(33).toString('base64'))).toBe(false);
    expect(isWireGuardKey(`${'A'.repeat(42)}B=`)).toBe(false); // non-zero padding bits
    expect(() => publicKeyFromPrivate('nope')).toThrow(InvalidKeyError);
  });

  it('compares private keys as X25519 scalars', () => {
    const raw = Buffer.alloc(32, 0xff);
    const clamped = Buffer.from(raw);
    clamped[0] = 0xf8;
    clamped[31] = 0x7f;
    expect(samePrivateKey(raw.toString('base64'), clamped.toString('base64'))).toBe(true);
    expect(samePrivateKey(generateKeyPair().privateKey, generateKeyPair().privateKey)).toBe(false);
  });
});
