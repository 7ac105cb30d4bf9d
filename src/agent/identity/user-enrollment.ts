/**
 * `agent --login`: the device enrolls as a signed-in user, like `tailscale
 * up` without an auth key. The agent runs the device login (the URL and code
 * go to stderr), enrolls with the session, keeps only the device token and
 * revokes the session.
 */
import type { Logger } from 'pino';
import { AuthError, FleetplaneError, NotFoundError, type FleetplaneClient } from '../../client/index.js';
import type { CreatedSession, DeviceLogin } from '../../protocol/index.js';
import { AgentFatalError, errorMessage } from '../errors.js';

/** How the agent shows the user where to sign in. */
export interface UserLogin {
  /** Called once with the code to show (the agent writes it to stderr). */
  show(login: DeviceLogin): void;
}

/** The login's result: a session that may enroll in `org` if the user is a server admin or its owner or admin. */
export async function signInToEnroll(client: FleetplaneClient, login: UserLogin, org: string | undefined, signal: AbortSignal): Promise<CreatedSession> {
  if (org === undefined) throw new AgentFatalError('config', '--login needs --org: a user may be a member of several organizations');
  try {
    return await client.auth.deviceLogin({ client: 'agent', signal, onCode: (l) => login.show(l) });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof NotFoundError) throw new AgentFatalError('enrollment_refused', `the server has no user login (--oidc-issuer): ${errorMessage(err)}`, { cause: err });
    if (err instanceof FleetplaneError) throw new AgentFatalError('enrollment_refused', `the login did not succeed: ${errorMessage(err)}`, { cause: err });
    throw err;
  }
}

/** A refused enrollment with a user's session, as a fatal error that says what to do. */
export function refusedUser(err: unknown): AgentFatalError | undefined {
  const what = errorMessage(err);
  if (err instanceof NotFoundError) {
    return new AgentFatalError('enrollment_refused', `the organization was not found, or the user is no member of it: ${what}`, { cause: err });
  }
  if (err instanceof AuthError) {
    return new AgentFatalError('enrollment_refused', `the user may not enroll devices in this organization (owners, admins and server admins may): ${what}`, { cause: err });
  }
  return undefined;
}

/** Revokes the session used to enroll; a failure is logged (the session ends by itself at its expiry). */
export async function endSession(client: FleetplaneClient, session: CreatedSession, logger: Logger): Promise<void> {
  try {
    await client.auth.logout({ token: session.token });
  } catch (err) {
    logger.warn({ err, session_id: session.session.id }, 'revoking the enrollment session failed; it ends at its expiry');
  }
}
