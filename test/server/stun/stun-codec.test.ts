import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeStunMessage,
  encodeBindingError,
  encodeBindingRequest,
  encodeBindingSuccess,
  encodeStunMessage,
  readMappedAddress,
  STUN_ATTRIBUTE,
  STUN_MAGIC_COOKIE,
  STUN_MESSAGE_TYPE,
  stunAddress,
  type StunAddress,
} from '../../../src/protocol/index.js';
import { answerStun } from '../../../src/server/stun/index.js';

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const address: fc.Arbitrary<StunAddress> = fc.oneof(
  fc.record({ family: fc.constant(4 as const), address: ipv4, port: fc.nat(65535) }),
  fc.record({ family: fc.constant(6 as const), address: fc.ipV6(), port: fc.nat(65535) }).map((a) => stunAddress(a.address, a.port) ?? a),
);
const transactionId = fc.uint8Array({ minLength: 12, maxLength: 12 });

describe('the STUN codec (RFC 5389)', () => {
  it('reads RFC 5769 test vector 2.2 (IPv4 response): XOR-MAPPED-ADDRESS 192.0.2.1:32853', () => {
    // RFC 5769 §2.2 without its SOFTWARE, MESSAGE-INTEGRITY and FINGERPRINT (recomputed framing).
    const tid = Uint8Array.from([0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae]);
    const bytes = encodeStunMessage({
      type: STUN_MESSAGE_TYPE.bindingSuccess,
      transactionId: tid,
      classic: false,
      attributes: [{ type: STUN_ATTRIBUTE.xorMappedAddress, value: Uint8Array.from([0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43]) }],
    });
    const decoded = decodeStunMessage(bytes);
    expect(decoded && readMappedAddress(decoded)).toEqual({ family: 4, address: '192.0.2.1', port: 32853 });
  });

  it('reads RFC 5769 test vector 2.3 (IPv6 response): XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853', () => {
    const tid = Uint8Array.from([0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae]);
    const value = Uint8Array.from([
      0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3, 0xf1, 0x79, 0xbc, 0x25, 0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9,
    ]);
    const bytes = encodeStunMessage({ type: STUN_MESSAGE_TYPE.bindingSuccess, transactionId: tid, classic: false, attributes: [{ type: STUN_ATTRIBUTE.xorMappedAddress, value }] });
    const decoded = decodeStunMessage(bytes);
    expect(decoded && readMappedAddress(decoded)).toEqual({ family: 6, address: '2001:db8:1234:5678:11:2233:4455:6677', port: 32853 });
  });

  it('a Binding request is 20 bytes: type 0x0001, length 0, the magic cookie, the transaction id', () => {
    const tid = randomBytes(12);
    const bytes = Buffer.from(encodeBindingRequest(tid));
    expect(bytes.length).toBe(20);
    expect(bytes.readUInt16BE(0)).toBe(0x0001);
    expect(bytes.readUInt16BE(2)).toBe(0);
    expect(bytes.readUInt32BE(4)).toBe(STUN_MAGIC_COOKIE);
    expect(bytes.subarray(8)).toEqual(tid);
    expect(() => encodeBindingRequest(new Uint8Array(11))).toThrow(RangeError);
  });

  it('round-trips a success response: both attributes carry the address, the transaction id is kept', () => {
    fc.assert(
      fc.property(transactionId, address, (tid, mapped) => {
        const decoded = decodeStunMessage(encodeBindingSuccess({ transactionId: tid, classic: false }, mapped));
        expect(decoded).toMatchObject({ type: STUN_MESSAGE_TYPE.bindingSuccess, classic: false });
        expect(decoded?.transactionId).toEqual(tid);
        expect(decoded && readMappedAddress(decoded)).toEqual(mapped);
        const plain = decoded?.attributes.find((a) => a.type === STUN_ATTRIBUTE.mappedAddress);
        expect(plain && readMappedAddress({ ...decoded!, attributes: [plain] })).toEqual(mapped);
      }),
    );
  });

  it('round-trips any framed message, attributes padded to 4 bytes', () => {
    const attribute = fc.record({ type: fc.nat(0xffff), value: fc.uint8Array({ maxLength: 40 }) });
    fc.assert(
      fc.property(fc.nat(0x3fff), transactionId, fc.array(attribute, { maxLength: 6 }), (type, tid, attributes) => {
        const bytes = encodeStunMessage({ type, transactionId: tid, classic: false, attributes });
        expect(bytes.length % 4).toBe(0);
        const decoded = decodeStunMessage(bytes);
        expect(decoded).toEqual({ type, transactionId: tid, classic: false, attributes });
      }),
    );
  });

  it('never throws on random bytes, nor on a valid header followed by random attributes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        const decoded = decodeStunMessage(bytes);
        if (decoded) readMappedAddress(decoded);
        const answer = answerStun(bytes, { address: '203.0.113.9', port: 40000 });
        expect(['answered', 'refused', 'ignored']).toContain(answer.outcome);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(transactionId, fc.uint8Array({ maxLength: 200 }).filter((b) => b.length % 4 === 0), fc.nat(0xffff), (tid, body, type) => {
        const header = Buffer.alloc(20);
        header.writeUInt16BE(type & 0x3fff, 0);
        header.writeUInt16BE(body.length, 2);
        header.writeUInt32BE(STUN_MAGIC_COOKIE, 4);
        Buffer.from(tid).copy(header, 8);
        const bytes = Buffer.concat([header, body]);
        const decoded = decodeStunMessage(bytes);
        if (decoded) readMappedAddress(decoded);
        answerStun(bytes, { address: '::ffff:203.0.113.9', port: 1 });
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses malformed framing: short, misaligned, a length that disagrees, an attribute past the end', () => {
    const ok = Buffer.from(encodeBindingRequest(randomBytes(12)));
    expect(decodeStunMessage(ok.subarray(0, 19))).toBeUndefined();
    const badTopBits = Buffer.from(ok);
    badTopBits[0] = 0x40;
    expect(decodeStunMessage(badTopBits)).toBeUndefined();
    const longer = Buffer.concat([ok, Buffer.alloc(4)]);
    expect(decodeStunMessage(longer)).toBeUndefined();
    longer.writeUInt16BE(4, 2);
    longer.writeUInt16BE(0x8022, 20);
    longer.writeUInt16BE(8, 22); // runs 8 bytes past the end
    expect(decodeStunMessage(longer)).toBeUndefined();
  });

  it('encodes an error response with its code, reason and unknown attributes', () => {
    const tid = randomBytes(12);
    const decoded = decodeStunMessage(encodeBindingError({ transactionId: tid, classic: false }, 420, 'Unknown Attribute', [0x0003, 0x0027]));
    expect(decoded?.type).toBe(STUN_MESSAGE_TYPE.bindingError);
    const error = decoded?.attributes.find((a) => a.type === STUN_ATTRIBUTE.errorCode);
    expect(error && [error.value[2], error.value[3], Buffer.from(error.value.subarray(4)).toString()]).toEqual([4, 20, 'Unknown Attribute']);
    const unknown = decoded?.attributes.find((a) => a.type === STUN_ATTRIBUTE.unknownAttributes);
    expect(unknown && Buffer.from(unknown.value).toString('hex')).toBe('00030027');
  });

  it('reports an IPv4 client of a dual-stack socket as IPv4, and writes IPv6 in RFC 5952 form', () => {
    expect(stunAddress('::ffff:198.51.100.7', 5)).toEqual({ family: 4, address: '198.51.100.7', port: 5 });
    expect(stunAddress('2001:DB8:0:0:1:0:0:1', 5)).toEqual({ family: 6, address: '2001:db8::1:0:0:1', port: 5 });
    expect(stunAddress('::1', 5)).toEqual({ family: 6, address: '::1', port: 5 });
    expect(stunAddress('not an address', 5)).toBeUndefined();
  });
});

describe('answering a datagram', () => {
  const from = { address: '203.0.113.9', port: 40000 };

  it('answers a Binding request with the sender\'s address', () => {
    const tid = randomBytes(12);
    const answer = answerStun(encodeBindingRequest(tid), from);
    expect(answer.outcome).toBe('answered');
    const reply = decodeStunMessage(answer.reply!);
    expect(reply?.transactionId).toEqual(Uint8Array.from(tid));
    expect(reply && readMappedAddress(reply)).toEqual({ family: 4, ...from });
  });

  it('answers an RFC 3489 request (no magic cookie) with MAPPED-ADDRESS only, echoing its 16-byte id', () => {
    const request = Buffer.alloc(20);
    request.writeUInt16BE(0x0001, 0);
    randomBytes(16).copy(request, 4);
    const answer = answerStun(request, from);
    const reply = decodeStunMessage(answer.reply!);
    expect(reply).toMatchObject({ classic: true, type: STUN_MESSAGE_TYPE.bindingSuccess });
    expect(Buffer.from(answer.reply!).subarray(4, 20)).toEqual(request.subarray(4, 20));
    expect(reply?.attributes.map((a) => a.type)).toEqual([STUN_ATTRIBUTE.mappedAddress]);
    expect(reply && readMappedAddress(reply)).toEqual({ family: 4, ...from });
  });

  it('refuses (420) a CHANGE-REQUEST asking for another address or port, accepts one asking for nothing', () => {
    const withChange = (flags: number): Uint8Array =>
      encodeStunMessage({
        type: STUN_MESSAGE_TYPE.bindingRequest,
        transactionId: randomBytes(12),
        classic: false,
        attributes: [{ type: STUN_ATTRIBUTE.changeRequest, value: Uint8Array.from([0, 0, 0, flags]) }],
      });
    expect(answerStun(withChange(0), from).outcome).toBe('answered');
    const refused = answerStun(withChange(0x06), from);
    expect(refused.outcome).toBe('refused');
    expect(decodeStunMessage(refused.reply!)?.type).toBe(STUN_MESSAGE_TYPE.bindingError);
  });

  it('ignores responses, indications and other methods', () => {
    const tid = randomBytes(12);
    for (const type of [STUN_MESSAGE_TYPE.bindingSuccess, 0x0011, 0x0003]) {
      expect(answerStun(encodeStunMessage({ type, transactionId: tid, classic: false, attributes: [] }), from)).toEqual({ outcome: 'ignored' });
    }
  });
});
