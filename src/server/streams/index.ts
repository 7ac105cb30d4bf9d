/** The one owner of every long-lived stream (docs/protocol.md "Long-lived streams"). */
export { StreamOwner, type GuardedOwnedStream, type StreamOwnerOptions } from './stream-owner.js';
export { STREAM_KINDS, ENDS, type OwnedStream, type StreamEnd, type StreamKind, type EndCause } from './owned-stream.js';
export { StreamMetrics } from './stream-metrics.js';
export { LineStream, type LineStreamOptions } from './line-stream.js';
export { startResponse, type StreamSocket } from './stream-socket.js';
export { Http2StreamSocket } from './http2-stream-socket.js';
export { chunk, chunkLine, encodeError, responseHead, KEEPALIVE, CHUNK_END, LAST_CHUNK } from './chunks.js';
export { KernelMemoryGuard, type GuardedStream } from './kernel-memory-guard.js';
export { procTcpMemory, type TcpMemorySource } from './proc-tcp.js';
export { tcpConnection, type TcpConnection } from './tcp-connection.js';
export { endConnection, resetConnection, LAST_LINE_GRACE_MS } from './socket-reset.js';
