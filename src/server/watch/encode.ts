import { watchLineHead, type WatchKind } from '../../protocol/index.js';
import { chunk } from '../streams/index.js';

export function encodeObjectEvent(kind: WatchKind, type: 'change' | 'delete', value: unknown): Buffer {
  return chunk(`${watchLineHead(type, kind)}${JSON.stringify(value)}}`);
}

export function encodeTail(kind: WatchKind, revision: number): Buffer {
  return chunk(`${watchLineHead('tail', kind)}{"revision":${revision}}}`);
}

export function encodeBookmark(revision: number): Buffer {
  return chunk(`${watchLineHead('bookmark')}{"revision":${revision}}}`);
}
