import { fleetplane, type Run } from '../../support/fleetplane-process.js';

/** `fleetplane serve ...args` as a real process, with a wait for what it prints. */
export function serve(args: string[], env: Record<string, string> = {}): Run & { waitFor(re: RegExp): Promise<RegExpExecArray> } {
  const run = fleetplane(['serve', ...args], env);
  /** Waits until stdout matches `re`; fails if the process exits first. */
  const waitFor = async (re: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const m = re.exec(run.out.stdout);
      if (m) return m;
      const ended = await Promise.race([run.exit.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]);
      if (ended) throw new Error(`serve exited before printing ${re}: ${run.out.stdout}\n${run.out.stderr}`);
    }
  };
  return { ...run, waitFor };
}
