/** Options of one `npm run bench` invocation. */
export interface BenchOptions {
  runs: number;
  large: boolean;
  outDir: string;
  /** Watch sockets per load-generator process (fewer than the ~19,900 one process can hold). */
  socketsPerWorker: number;
  /** Values of scenario options (ScenarioFlag), by flag name, e.g. `{'--agents': '1000,5000'}`. */
  flags: Record<string, string>;
}

/**
 * An option of one scenario (`--name VALUE` or `--name=VALUE`), accepted on
 * the command line when a scenario declares it; checked before anything runs.
 */
export interface ScenarioFlag {
  name: string;
  /** Placeholder in --help, e.g. `LIST`. */
  value: string;
  help: string;
  /** Why `value` is not acceptable, or undefined when it is. */
  check(value: string): string | undefined;
}

export interface ScenarioContext {
  opts: BenchOptions;
  /** Aborts when the scenario's time limit passes (or the harness is interrupted). */
  signal: AbortSignal;
}

/** A table printed to stdout. */
export interface Table {
  title: string;
  columns: string[];
  rows: (string | number)[][];
}

/** A target from the benchmarks issue, checked against a figure measured in the same run. */
export interface TargetResult {
  name: string;
  /** The target in words, e.g. "all received ≤ 2× raw-floor". */
  target: string;
  /** Median measured ratio (or value) and the limit it is checked against. */
  measured: number;
  limit: number;
  pass: boolean;
  detail: string;
}

export interface ScenarioResult {
  /** When set, the scenario did not run, and this says why. */
  skipped?: string;
  /** Exact settings: server flags, sizes, counts, durations. */
  settings: Record<string, unknown>;
  tables: Table[];
  /** Per-run figures, as measured. */
  runs: unknown[];
  /** Median, min and max of each figure over the runs. */
  summary: Record<string, unknown>;
  targets: TargetResult[];
  notes: string[];
}

export interface Scenario {
  name: string;
  /** One line for --help. */
  summary: string;
  /** Part of `npm run bench` without scenario names. */
  inDefault: boolean;
  /** Options of its own (see ScenarioFlag). */
  flags?: readonly ScenarioFlag[];
  /**
   * Runs when `--runs` isn't given, instead of the harness's 3: for a
   * scenario whose ratios swing with the machine's other load, a median
   * over more paired runs is the figure that holds.
   */
  defaultRuns?: number;
  /** Upper bound on the scenario's run time; it is stopped when it passes. */
  timeLimitMs(opts: BenchOptions): number;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

export function skipped(reason: string, settings: Record<string, unknown> = {}): ScenarioResult {
  return { skipped: reason, settings, tables: [], runs: [], summary: {}, targets: [], notes: [] };
}
