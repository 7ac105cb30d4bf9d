/** Paths to peers: judged by WireGuard's handshakes, direct where possible, through the server relay where not. */
export { setUpPaths, type Paths, type PathSetupInput } from './path-setup.js';
export { PathManager, type PathDataplane, type PathManagerOptions } from './path-manager.js';
export { PeerPath, type PathDecision, type PeerReading, type PathContext } from './peer-path.js';
export { PathReporter, type PathReport } from './path-report.js';
export { RelayClient, relaySessionUrl, type RelayClientOptions } from './relay-client.js';
export { RelayProxies, RELAY_SOCKET_BUFFER_BYTES } from './relay-proxies.js';
