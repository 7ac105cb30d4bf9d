/**
 * How every `fleetplane` command ends, the same for serve, agent and ctl:
 * 0 success; 1 a runtime failure (the server, the network, or a state the
 * command can't work with: a name that matches nothing or several things);
 * 2 bad usage (unknown command or flag, missing or malformed argument).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A mistake in the command line: reported on one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
