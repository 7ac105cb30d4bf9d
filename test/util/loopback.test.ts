/** Which listen addresses count as loopback (no clear-text warning at start). */
import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/util/loopback.js';

describe('isLoopbackHost', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1'])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });
  it.each(['0.0.0.0', '::', '[::]', '10.0.0.1', '192.0.2.1', '::ffff:10.0.0.1', '2001:db8::1', 'fleet.example.com', '128.0.0.1'])('%s is not', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
