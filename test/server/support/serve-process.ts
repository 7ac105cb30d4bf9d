import { fleetplane, type Run } from '../../support/fleetplane-process.js';

/** `fleetplane serve ...args` as a real process, with a wait for what it prints. */
export function serve(
  args: string[],
  env: Record<string, string> = {},
): Run & { waitFor(re: RegExp): Promise<RegExpExecArray>; waitForStderr(re: RegExp): Promise<RegExpExecArray> } {
  const run = fleetplane(['serve', ...args], env);
  /** Waits until the stream matches `re`; fails if the process exits first. */
  const waitOn = async (stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const m = re.exec(run.out[stream]);
      if (m) return m;
      const ended = await Promise.race([run.exit.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]);
      if (ended) throw new Error(`serve exited before printing ${re}: ${run.out.stdout}\n${run.out.stderr}`);
    }
  };
  return { ...run, waitFor: (re) => waitOn('stdout', re), waitForStderr: (re) => waitOn('stderr', re) };
}
