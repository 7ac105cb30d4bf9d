import { describe, expect, it } from 'vitest';
import { scanWatchLine } from '../../src/bench/load/watch-line-scan.js';
import { watchLineHead } from '../../src/protocol/index.js';

function scan(line: string) {
  // As the simulated agents see it: a line inside a longer text.
  const text = `xx\n${line}\nyy`;
  return scanWatchLine(text, 3, 3 + line.length);
}

describe('the simulated agents read a watch line without parsing it', () => {
  it('takes type, kind and the object revision from change, patch, gzip, delete and tail lines', () => {
    const device = { id: 'd1', revision: 41, endpoints: [{ source: 'stun', address: '203.0.113.1:41641' }], hostname: 'revision-1' };
    expect(scan(`${watchLineHead('change', 'device')}${JSON.stringify(device)}}`)).toEqual({ type: 'change', kind: 0, revision: 41 });
    // A patch's revision, not its from_revision, even where a member is named "revision".
    const patch = { revision: 52, from_revision: 41, id: 'd1', set: { hostname: 'h', note: { revision: 7 } } };
    expect(scan(`${watchLineHead('patch', 'device')}${JSON.stringify(patch)}}`)).toEqual({ type: 'patch', kind: 0, revision: 52 });
    expect(scan(`${watchLineHead('patch', 'security-group')}${JSON.stringify({ ...patch, revision: 60 })}}`)).toEqual({ type: 'patch', kind: 1, revision: 60 });
    // A gzip event's revision comes first; its data never names one.
    expect(scan(`${watchLineHead('gzip', 'organization')}{"revision":70,"data":"H4sIAAAAAAAAA6tWKkpNzszPU7JSMDIwMtBRKkpNzszPUzLUUUpLzclRslIwNLAAAA=="}}`)).toEqual({ type: 'gzip', kind: 2, revision: 70 });
    expect(scan(`${watchLineHead('delete', 'organization')}{"id":"o","revision":9}}`)).toEqual({ type: 'delete', kind: 2, revision: 9 });
    expect(scan(`${watchLineHead('tail', 'device')}{"revision":1234567890123}}`)).toEqual({ type: 'tail', kind: 0, revision: 1234567890123 });
  });

  it('reads bookmarks and error codes, and calls anything else unparsed', () => {
    expect(scan(`${watchLineHead('bookmark')}{"revision":77}}`)).toEqual({ type: 'bookmark', revision: 77 });
    expect(scan(`${watchLineHead('error')}{"code":"slow_consumer","message":"m"}}`)).toEqual({ type: 'error', code: 'slow_consumer' });
    expect(scan('{"kind":"device","type":"unknown","value":{"revision":1}}')).toEqual({ type: 'unparsed' });
    expect(scan(`${watchLineHead('change', 'device')}{"id":"d1","revision":}}`)).toEqual({ type: 'unparsed' });
    expect(scan(`${watchLineHead('change', 'device')}{"id":"d1"}}`)).toEqual({ type: 'unparsed' });
  });
});
