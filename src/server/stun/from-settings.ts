import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Settings } from '../config/settings.js';
import { StunMetrics } from './stun-metrics.js';
import { startStunServer, type StunServer } from './stun-server.js';

/**
 * The responder `--stun`, `--stun-port` and `--stun-alt-port` ask for, on
 * `--host`; undefined when `--stun=false`. Throws StunStartError when a port
 * can't be bound.
 */
export async function startStunFromSettings(
  settings: Pick<Settings, 'host' | 'stun' | 'stunPort' | 'stunAltPort'>,
  registry: Registry,
  logger: Logger,
): Promise<StunServer | undefined> {
  if (!settings.stun) return undefined;
  return startStunServer({ host: settings.host, port: settings.stunPort, altPort: settings.stunAltPort, metrics: new StunMetrics(registry), logger });
}
