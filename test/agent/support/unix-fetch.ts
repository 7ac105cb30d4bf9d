/**
 * Reaching a server inside a network namespace from the test process: a
 * forwarder runs inside the namespace and listens on a unix socket (the file
 * system is shared by every namespace), and a FetchLike speaks HTTP over it.
 */

export { FORWARDER_SOURCE, unixSocketFetch } from '../../../src/bench/netns/namespace-http.js';

/**
 * `node -e` source of the opposite forwarder, run inside a namespace: it
 * listens on argv[1] (host) : argv[2] (port) there and connects each
 * connection to the unix socket argv[3], which a server outside the
 * namespace (PostgreSQL, Redis) listens on.
 */
export const TCP_TO_UNIX_SOURCE = `
const net = require('node:net');
const [host, port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(Number(port), host, () => process.stdout.write('forwarding\\n'));
`;
