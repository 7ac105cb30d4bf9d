/**
 * Why the agent stops for good (non-zero exit). Everything else it retries.
 *
 * - `token_refused`: the server refuses the device token (revoked, or the
 *   device was deleted): re-enroll with a new state directory.
 * - `token_expired`: the device token expired before it was renewed (the
 *   agent was stopped, or could not reach the server, past its expiry): the
 *   device must enroll again, as with `token_refused`.
 * - `device_deleted`: the device was deleted from its organization.
 * - `enrollment_refused`: the registration key or the enrollment request was refused.
 * - `state_dir`: the state directory can't be used (corrupt, other organization, mismatched key).
 * - `config`: a setting is missing or can't be used (e.g. the local port is taken).
 * - `internal`: a loop of the agent failed unexpectedly (a bug; the log has it).
 */
export type FatalReason = 'token_refused' | 'token_expired' | 'device_deleted' | 'enrollment_refused' | 'state_dir' | 'config' | 'internal';

export class AgentFatalError extends Error {
  override readonly name = 'AgentFatalError';
  constructor(
    readonly reason: FatalReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error && !err.message.includes(err.cause.message) ? ` (${err.cause.message})` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
