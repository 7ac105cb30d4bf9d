#!/usr/bin/env node
/** The `fleetplane` command: serve | agent | ctl | sync. */
const USAGE = `Usage: fleetplane <command> [options]

Commands:
  serve     run the control-plane server (fleetplane serve --help)
  agent     run the agent on a machine of the fleet (fleetplane agent --help)
  ctl       operate the control plane from the command line (fleetplane ctl --help)
  sync      keep an organization's policy document equal to a file or URL (fleetplane sync --help)
  completion  print a shell completion script: fleetplane completion bash|zsh|fish

  --version   print the version
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('./serve.js')).runServe(rest);
    case 'agent':
      return (await import('./agent.js')).runAgent(rest);
    case 'ctl': {
      const { runCtl } = await import('./ctl/index.js');
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      return runCtl(rest, { stdout: process.stdout, stderr: process.stderr, env: process.env, signal: stop.signal });
    }
    case 'sync':
      return (await import('./sync.js')).runSync(rest);
    case 'completion':
      return (await import('./completion/index.js')).runCompletion(rest, process.stdout, process.stderr);
    case '--version':
    case 'version':
      process.stdout.write((await import('./version.js')).versionLine());
      return 0;
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`fleetplane: unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`fleetplane: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
