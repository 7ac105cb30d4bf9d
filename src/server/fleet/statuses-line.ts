import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PAGE_STATUS_PACK_MIN_BYTES, type StatusesItems } from '../../protocol/index.js';
import { chunk } from '../streams/index.js';

const gzipAsync = promisify(gzip);

/**
 * A page stream's `statuses` line (docs/protocol.md "Page stream"), as one
 * chunk every page stream of the organization is written. Items of
 * PAGE_STATUS_PACK_MIN_BYTES or more go packed: a reset at 10,000 devices
 * is 1.8 MB of JSON and 0.36 MB packed (base64 included). Packing runs on the
 * thread pool, not the event loop that serves the fleet.
 */
export async function encodeStatuses(reset: boolean, items: StatusesItems): Promise<Buffer> {
  const json = JSON.stringify(items);
  if (json.length < PAGE_STATUS_PACK_MIN_BYTES) return chunk(`{"type":"statuses","value":{"reset":${reset},${json.slice(1)}}`);
  const data = (await gzipAsync(json)).toString('base64');
  return chunk(`{"type":"statuses","value":{"reset":${reset},"gzip":"${data}"}}`);
}
