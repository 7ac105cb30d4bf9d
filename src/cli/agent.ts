import { AgentOptionsError, agentHelp, parseAgentOptions } from '../agent/options.js';
import { cliLogger } from './cli-logger.js';
import { EXIT } from './exit-codes.js';
import { versionLine } from './version.js';
import { stopOnSignals } from './stop-signals.js';

/** `fleetplane agent`: runs until SIGTERM/SIGINT (then shuts down cleanly), or until a fatal error. */
export async function runAgent(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(agentHelp());
    return EXIT.ok;
  }
  if (argv.includes('--version')) {
    process.stdout.write(versionLine());
    return EXIT.ok;
  }
  let options;
  try {
    options = parseAgentOptions(argv, process.env);
  } catch (err) {
    if (err instanceof AgentOptionsError) {
      process.stderr.write(`fleetplane agent: ${err.message}\n`);
      return EXIT.usage;
    }
    throw err;
  }
  // The agent itself (its schemas, dataplane and transports) loads only once it is to run:
  // --help, --version and a usage error start in a fraction of the time.
  const { Agent, AgentFatalError, caFileHint } = await import('../agent/index.js');
  const logger = cliLogger({ level: options.logLevel, base: { service: 'fleetplane-agent' } });
  const stop = stopOnSignals(logger);
  try {
    await new Agent(options, { logger }).run(stop.signal);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof AgentFatalError) {
      const hint = caFileHint(err);
      process.stderr.write(`fleetplane agent: fatal (${err.reason}): ${err.message}${hint ? `; ${hint}` : ''}\n`);
      return EXIT.failure;
    }
    throw err;
  } finally {
    stop.dispose();
  }
}
