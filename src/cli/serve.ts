// Only what reading the settings and binding the port need is loaded up front: a busy port must fail before the
// rest of the server (a second of loading) is, let alone its storage.
import { bearerAuthorization } from '../protocol/bearer.js';
import { paths } from '../protocol/paths.js';
import { parseSettings, SettingsError, SETTING_SPECS } from '../server/config/settings.js';
import { bindAddress, probePort, reservePort } from '../server/http/reserved-port.js';
import type { FleetServer, ServerTestHooks } from '../server/server.js';
import { cliLogger } from './cli-logger.js';
import { EXIT } from './exit-codes.js';
import { versionLine } from './version.js';

export function serveHelp(): string {
  const lines = SETTING_SPECS.map((s) => `  --${s.flag.padEnd(26)} ${s.env ? `[${s.env}] ` : ''}${s.help}`);
  return `Usage: fleetplane serve [settings]\n\nSettings (flags win over environment variables):\n${lines.join('\n')}\n`;
}

/**
 * `fleetplane serve`: runs until SIGTERM/SIGINT, then drains and exits 0.
 * SIGHUP reloads the TLS certificate. Exits 2 on a bad setting, 1 when the
 * server can't start or stop cleanly. `hooks` are for tests only
 * (test/support/serve-with-faults.mjs); `fleetplane serve` passes none.
 */
export async function runServe(argv: readonly string[], hooks: ServerTestHooks = {}): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(serveHelp());
    return EXIT.ok;
  }
  if (argv.includes('--version')) {
    process.stdout.write(versionLine());
    return EXIT.ok;
  }
  let settings;
  try {
    settings = parseSettings(argv);
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`fleetplane serve: ${err.message}\n`);
      return EXIT.usage;
    }
    throw err;
  }
  const cluster = (await import('node:cluster')).default;
  if (settings.workers > 1 && cluster.isPrimary) {
    // Before the storage: a port in use fails the start at once (the workers bind it through this process later);
    // main prints the error's one line and exits 1.
    await probePort(await bindAddress(settings.host), settings.port, '--port');
    const { runWorkers } = await import('./workers.js');
    return runWorkers(settings, argv);
  }
  const reservedPort = cluster.isPrimary ? await reservePort(settings) : undefined;
  const { startServerWithHooks } = await import('../server/server.js');
  const logger = cliLogger({ level: settings.logLevel, base: { service: 'fleetplane' } });
  let server: FleetServer;
  try {
    server = await startServerWithHooks(settings, { logger, ...(reservedPort ? { reservedPort } : {}) }, hooks);
  } catch (err) {
    // The port bound above would keep the process alive after a failed start.
    reservedPort?.close();
    throw err;
  }
  if (!cluster.isPrimary) {
    const { serveAsWorker } = await import('./workers.js');
    return serveAsWorker(server.url ?? '', waitForSignal(server));
  }
  // Before the banner: whoever reads it may signal at once, and a SIGTERM that came before the listener would kill
  // the process instead of draining it.
  const stopped = waitForSignal(server);
  const token = server.adminToken.token;
  process.stdout.write(
    [
      `fleetplane is listening on ${server.url ?? '(not listening)'}`,
      token
        ? `admin token: ${token}`
        : 'admin token: kept in the database as a hash (shown only when it was generated; set --admin-token to choose one)',
      `try: curl -H "Authorization: ${bearerAuthorization(token ?? '<admin token>')}" ${server.url ?? ''}${paths.organizations()}`,
      '',
    ].join('\n'),
  );
  return stopped;
}

function waitForSignal(server: FleetServer): Promise<number> {
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (exitCode: number): void => {
      if (stopping) return;
      stopping = true;
      const done = (code: number): void => {
        resolve(code);
        // The stop is bounded by --shutdown-grace; a step it left behind (a database that doesn't answer)
        // must not keep the process: it exits once what it has to say is out.
        setTimeout(() => process.exit(code), 500).unref();
      };
      server.close().then(
        () => done(exitCode),
        (err: unknown) => {
          server.ctx.logger.error({ err }, 'shutdown failed');
          done(1);
        },
      );
    };
    const onSignal = (signal: string): void => {
      if (!stopping) server.ctx.logger.info({ signal }, 'shutting down');
      stop(0);
    };
    // Every SIGTERM, not just the first: a second one finding no listener would end the process mid-drain. Under
    // `--workers` a worker gets two whenever its process group is signalled (systemd's default KillMode, a
    // terminal, `kill -- -PGID`): the group's, then the primary's. A second SIGINT still ends it at once.
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    // Without its storage the server can only fail requests: stop, and let a supervisor restart it.
    void server.storageLost.then((err) => {
      if (!stopping) server.ctx.logger.fatal({ err }, 'storage lost; shutting down');
      stop(1);
    });
    // Also without TLS: SIGHUP's default action would end the process.
    process.on('SIGHUP', () => {
      if (!stopping) void server.reloadTls();
    });
  });
}
