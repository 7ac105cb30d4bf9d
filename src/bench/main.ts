/**
 * `npm run bench -- [scenario...] [--large] [--runs N]`: runs benchmark
 * scenarios against real server processes, prints a table per scenario and
 * writes bench/results/<scenario>-<date>.json. See bench/README.md.
 */
import { fileURLToPath } from 'node:url';
import { killAll } from './children.js';
import { log } from './log.js';
import { loadAverage, machineInfo } from './machine.js';
import { renderTable, renderTargets, writeResult } from './report.js';
import type { BenchOptions, ScenarioResult, TargetResult } from './scenario.js';
import { SCENARIOS } from './scenarios/index.js';
import { nowMs } from './clock.js';
import { didYouMeanFlag } from '../util/nearest-name.js';
import { DEFAULT_SOCKETS_PER_WORKER } from './load/pool.js';
import { MAX_SOCKETS_PER_WORKER } from './load/messages.js';
import { stopSeeded } from './measure/seeded-org.js';
import { parseCommandLine, type CommandLineGrammar, type FlagDefinition } from '../util/command-line.js';

const DEFAULT_OUT = fileURLToPath(new URL('../../bench/results', import.meta.url));

function usage(): string {
  const names = SCENARIOS.map((s) => `  ${s.name.padEnd(18)} ${s.inDefault ? '*' : ' '} ${s.summary}`).join('\n');
  return `Usage: npm run bench -- [scenario...] [options]

Runs fleetplane benchmark scenarios (each against its own server process and
load-generator processes) and writes bench/results/<scenario>-<date>.json.
Without scenario names, runs the default set (marked *).

Scenarios:
${names}

Options:
  --runs N     runs per scenario (default 3, fanout 5; figures are median, min and max over the runs)
  --large      add the large sizes (30,000 watchers: needs 'serve --workers 2' and PostgreSQL)
  --out DIR    where result files go (default bench/results)
  --sockets-per-worker N
               watch sockets per load-generator process (default ${DEFAULT_SOCKETS_PER_WORKER}; at most ${MAX_SOCKETS_PER_WORKER})
  --list       print the scenario names and exit
  --help       this text
${scenarioFlags()}

See bench/README.md for what each scenario measures and how to read it.
`;
}

function scenarioFlags(): string {
  const lines = SCENARIOS.flatMap((s) => (s.flags ?? []).map((f) => `  ${`${f.name} ${f.value}`.padEnd(24)} (${s.name}) ${f.help}`));
  return lines.length > 0 ? `\nScenario options:\n${lines.join('\n')}` : '';
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The bench's own flags; each scenario's (`--name VALUE`) are added to them. */
const OWN_FLAGS: Record<string, FlagDefinition> = {
  help: { takesValue: false, short: 'h' },
  list: { takesValue: false },
  large: { takesValue: false },
  runs: { takesValue: true },
  'sockets-per-worker': { takesValue: true },
  out: { takesValue: true },
};

function parseArgs(argv: readonly string[]): { opts: BenchOptions; names: string[]; help: boolean; list: boolean; runsGiven: boolean } {
  const opts: BenchOptions = { runs: 3, large: false, outDir: DEFAULT_OUT, socketsPerWorker: DEFAULT_SOCKETS_PER_WORKER, flags: {} };
  const flags = SCENARIOS.flatMap((s) => s.flags ?? []);
  const grammar: CommandLineGrammar = { flags: { ...Object.fromEntries(flags.map((f) => [f.name.replace(/^--/, ''), { takesValue: true }])), ...OWN_FLAGS } };
  const names: string[] = [];
  let help = false;
  let runsGiven = false;
  let list = false;
  for (const word of parseCommandLine(argv, grammar)) {
    if (word.kind === 'end') throw new UsageError('unknown option --');
    if (word.kind === 'unknown') throw new UsageError(`unknown option ${word.word}${didYouMeanFlag(word.raw, Object.keys(grammar.flags))}`);
    if (word.kind === 'positional') {
      const a = word.value;
      if (a.startsWith('-')) throw new UsageError(`unknown option ${a}`);
      if (!SCENARIOS.some((s) => s.name === a)) throw new UsageError(`unknown scenario "${a}" (try --list)`);
      names.push(a);
      continue;
    }
    const v = word.value;
    const own = Object.hasOwn(OWN_FLAGS, word.name) ? OWN_FLAGS[word.name] : undefined;
    // A switch takes no value, not even `--large=1`.
    if (own?.takesValue === false && v !== undefined) throw new UsageError(`unknown option ${word.raw}=${v}`);
    if (word.name === 'help') help = true;
    else if (word.name === 'list') list = true;
    else if (word.name === 'large') opts.large = true;
    else if (word.name === 'runs') {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 50) throw new UsageError(`--runs needs an integer from 1 to 50 (got "${v}")`);
      opts.runs = n;
      runsGiven = true;
    } else if (word.name === 'sockets-per-worker') {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 100 || n > MAX_SOCKETS_PER_WORKER) {
        throw new UsageError(`--sockets-per-worker needs an integer from 100 to ${MAX_SOCKETS_PER_WORKER} (got "${v}")`);
      }
      opts.socketsPerWorker = n;
    } else if (word.name === 'out') {
      if (!v) throw new UsageError('--out needs a directory');
      opts.outDir = v;
    } else {
      const name = word.raw;
      const why = v === undefined ? 'needs a value' : flags.find((f) => f.name === name)?.check(v);
      if (why !== undefined) throw new UsageError(`${name}: ${why}`);
      opts.flags[name] = v ?? '';
    }
  }
  return { opts, names, help, list, runsGiven };
}

function abortedBy(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`bench: ${err.message}\n\n${usage()}`);
    return 2;
  }
  const { opts, help, list } = parsed;
  if (help) {
    process.stdout.write(usage());
    return 0;
  }
  if (list) {
    process.stdout.write(`${SCENARIOS.map((s) => s.name).join('\n')}\n`);
    return 0;
  }
  if (opts.runs < 3) log.warn({ runs: opts.runs }, 'fewer than 3 runs: the figures are not the medians the benchmarks issue asks for');
  const selected = parsed.names.length > 0 ? SCENARIOS.filter((s) => parsed.names.includes(s.name)) : SCENARIOS.filter((s) => s.inDefault);
  const machine = machineInfo();
  process.stdout.write(
    `fleetplane bench — ${machine.cores} cores (${machine.cpuModel}), ${(machine.memoryBytes / 1024 ** 3).toFixed(1)} GiB, Node ${machine.node}; runs: ${opts.runs}${opts.large ? ', large' : ''}\n`,
  );
  const allTargets: { scenario: string; t: TargetResult }[] = [];
  const outcomes: { name: string; status: string; seconds: number }[] = [];
  let failures = 0;
  const benchStart = nowMs();
  for (const scenario of selected) {
    const opts = parsed.runsGiven || scenario.defaultRuns === undefined ? parsed.opts : { ...parsed.opts, runs: scenario.defaultRuns };
    const limitMs = scenario.timeLimitMs(opts);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new Error(`time limit of ${Math.round(limitMs / 1000)} s passed`)), limitMs);
    const started = nowMs();
    const date = new Date().toISOString();
    const loadAverageAtStart = loadAverage();
    process.stdout.write(`\n=== ${scenario.name}: ${scenario.summary}${opts.runs === parsed.opts.runs ? '' : ` (${opts.runs} runs)`}\n`);
    let result: ScenarioResult | undefined;
    let error: string | undefined;
    try {
      result = await Promise.race([scenario.run({ opts, signal: ac.signal }), abortedBy(ac.signal)]);
    } catch (err) {
      error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      log.error({ err, scenario: scenario.name }, 'scenario failed');
      // Whatever the scenario left running ends here.
      killAll();
      failures++;
    } finally {
      clearTimeout(timer);
      ac.abort(new Error('scenario finished'));
    }
    const seconds = (nowMs() - started) / 1000;
    if (result?.skipped) process.stdout.write(`SKIPPED: ${result.skipped}\n`);
    for (const t of result?.tables ?? []) process.stdout.write(`\n${renderTable(t)}\n`);
    if (result && result.targets.length > 0) process.stdout.write(`\n${renderTargets(result.targets)}\n`);
    for (const n of result?.notes ?? []) process.stdout.write(`note: ${n}\n`);
    if (error) process.stdout.write(`ERROR: ${error.split('\n')[0]}\n`);
    for (const t of result?.targets ?? []) allTargets.push({ scenario: scenario.name, t });
    const path = writeResult(opts.outDir, {
      scenario: scenario.name,
      date,
      durationSeconds: seconds,
      machine: { ...machine, loadAverageAtStart, loadAverageAtEnd: loadAverage() },
      command: ['npm', 'run', 'bench', '--', ...argv],
      options: opts,
      ...(error !== undefined ? { error } : {}),
      result,
    });
    outcomes.push({ name: scenario.name, status: error ? 'error' : result?.skipped ? 'skipped' : 'ok', seconds });
    process.stdout.write(`(${seconds.toFixed(1)} s; load average ${loadAverageAtStart.join(' ')} → ${loadAverage().join(' ')}; written to ${path})\n`);
  }
  await stopSeeded();
  process.stdout.write(`\n=== summary (${((nowMs() - benchStart) / 1000).toFixed(0)} s)\n`);
  for (const o of outcomes) process.stdout.write(`${o.name.padEnd(18)} ${o.status.padEnd(8)} ${o.seconds.toFixed(1)} s\n`);
  if (allTargets.length > 0) {
    process.stdout.write(`\n${allTargets.map(({ scenario, t }) => `[${scenario}] ${renderTargets([t])}`).join('\n')}\n`);
  }
  return failures > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    killAll();
    process.exit(code);
  },
  (err: unknown) => {
    log.error({ err }, 'bench failed');
    killAll();
    process.exit(1);
  },
);
