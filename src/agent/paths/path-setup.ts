/**
 * Whether the agent manages paths, and with which relay: only with the
 * linux dataplane (it needs WireGuard's own view of handshakes, and the
 * endpoints it sets); the relay unless `--relay=false`.
 */
import type { Logger } from 'pino';
import type { ClientOptions } from 'ws';
import type { FleetplaneClient } from '../../client/index.js';
import { PATH_RESTUN_SPACING_MS } from '../../protocol/index.js';
import { LinuxDataplane, DEFAULT_PERSISTENT_KEEPALIVE, type Dataplane } from '../dataplane/index.js';
import type { AgentOptions } from '../options.js';
import { PathManager } from './path-manager.js';
import type { PathReport } from './path-report.js';
import { RelayClient } from './relay-client.js';

export interface Paths {
  manager: PathManager;
  relay: RelayClient | undefined;
  run(signal: AbortSignal): Promise<void>;
}

export interface PathSetupInput {
  options: Pick<AgentOptions, 'relay' | 'listenPort'>;
  dataplane: Dataplane;
  client: FleetplaneClient;
  server: string;
  token: () => string;
  wsOptions: ClientOptions | undefined;
  ownPublicKey: string;
  /** Probe STUN again now; called at most once per PATH_RESTUN_SPACING_MS. */
  restun: () => void;
  report: (report: PathReport) => void;
  logger: Logger;
}

/** The path manager (and relay client), or undefined when paths are not managed here (logged once). */
export function setUpPaths(input: PathSetupInput): Paths | undefined {
  const { dataplane, logger } = input;
  if (!(dataplane instanceof LinuxDataplane)) {
    logger.info({ dataplane: dataplane.mode }, 'paths are not managed: peers get their first endpoint (needs --dataplane linux)');
    return undefined;
  }
  let manager: PathManager | undefined;
  const relay = input.options.relay
    ? new RelayClient({
        client: input.client,
        server: input.server,
        token: input.token,
        wsOptions: input.wsOptions,
        wireguardPort: () => input.options.listenPort,
        logger: logger.child({ component: 'relay' }),
        onChange: () => manager?.relayChanged(),
      })
    : undefined;
  if (!relay) logger.info('the server relay is off (--relay=false): peers without a direct path stay unreachable');
  let lastRestun = -Infinity;
  manager = new PathManager({
    dataplane,
    relay,
    ownPublicKey: input.ownPublicKey,
    keepaliveSeconds: DEFAULT_PERSISTENT_KEEPALIVE,
    restun: () => {
      if (Date.now() - lastRestun < PATH_RESTUN_SPACING_MS) return;
      lastRestun = Date.now();
      input.restun();
    },
    report: input.report,
    logger: logger.child({ component: 'paths' }),
  });
  const paths: PathManager = manager;
  return {
    manager: paths,
    relay,
    run: async (signal) => {
      await Promise.all([paths.run(signal), relay?.run(signal)]);
    },
  };
}
