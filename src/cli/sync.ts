import { parseSyncOptions, syncHelp, SyncOptionsError, type ConnectionFlagName, type SyncOptions } from '../sync/options.js';
import type { FleetplaneClient } from '../client/index.js';
import { cliLogger } from './cli-logger.js';
import { openClient } from './ctl/connect.js';
import { describeError } from './ctl/describe-error.js';
import { isId, resolveOrganization } from './ctl/names.js';
import { EXIT, UsageError } from './exit-codes.js';
import { versionLine } from './version.js';
import { stopOnSignals } from './stop-signals.js';

/** The organization `ref` names, looked up once it succeeds (a name needs the server, which may be down at start). */
function orgResolver(client: FleetplaneClient, ref: string): (signal: AbortSignal) => Promise<string> {
  let id: string | undefined = isId(ref) ? ref : undefined;
  return async (signal) => (id ??= (await resolveOrganization(client, ref, signal)).id);
}

function connectionFlags(options: SyncOptions): { string(name: ConnectionFlagName): string | undefined } {
  return { string: (name) => options.connection[name] };
}

/** `fleetplane sync`: runs until SIGTERM/SIGINT (then stops cleanly); exit 2 for bad usage, 1 when it can't start. */
export async function runSync(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(syncHelp());
    return EXIT.ok;
  }
  if (argv.includes('--version')) {
    process.stdout.write(versionLine());
    return EXIT.ok;
  }
  let options: SyncOptions;
  let client: FleetplaneClient;
  let org: string;
  try {
    options = parseSyncOptions(argv, process.env);
    const opened = await openClient(connectionFlags(options), process.env, process.stderr);
    client = opened.client;
    if (opened.connection.org === undefined) throw new UsageError("--org is required (or a context's org)");
    org = opened.connection.org;
  } catch (err) {
    if (err instanceof SyncOptionsError || err instanceof UsageError) {
      process.stderr.write(`fleetplane sync: ${err.message} (see --help)\n`);
      return EXIT.usage;
    }
    process.stderr.write(`fleetplane sync: ${describeError(err)}\n`);
    return EXIT.failure;
  }
  const logger = cliLogger({ level: options.logLevel, base: { service: 'fleetplane-sync' } });
  const stop = stopOnSignals(logger);
  try {
    // The service (its listener and syncer) loads only once it is to run, not for --help or --version.
    const { startSyncService } = await import('../sync/index.js');
    const service = await startSyncService({
      client: client.policy,
      org: orgResolver(client, org),
      from: options.from,
      intervalMs: options.intervalMs,
      timeoutMs: options.timeoutMs,
      listen: options.listen,
      logger,
      signal: stop.signal,
    });
    await service.close();
    return EXIT.ok;
  } catch (err) {
    process.stderr.write(`fleetplane sync: ${describeError(err)}\n`);
    return EXIT.failure;
  } finally {
    stop.dispose();
  }
}
