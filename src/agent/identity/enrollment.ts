/**
 * First start: a key pair, then enrollment with the registration key; later
 * starts: the identity the state directory remembers.
 */
import type { Logger } from 'pino';
import {
  AuthError,
  Backoff,
  ConflictError,
  FleetplaneClient,
  NotFoundError,
  ValidationError,
  isRetryable,
  retryAfterOf,
  type FetchLike,
} from '../../client/index.js';
import type { Endpoint } from '../../protocol/index.js';
import type { WireGuardKeyPair } from '../dataplane/index.js';
import { AgentFatalError, errorMessage } from '../errors.js';
import { StateDir, StateDirError, type DeviceIdentity } from './state-dir.js';
import { logRetry } from '../transient.js';
import { endSession, refusedUser, signInToEnroll, type UserLogin } from './user-enrollment.js';
import { sleep } from '../../util/sleep.js';
import { accepted, checkEnrolledDevice, InvalidReceivedError } from '../received/index.js';
import { checkEnrolledOrg, isOrgId, keyOrganization, sessionOrganization, type OrgNames } from './org-ref.js';

export interface EnrollmentInput {
  stateDir: StateDir;
  server: string | undefined;
  /**
   * Where to enroll, by id or name (org-ref.ts); undefined: the registration
   * key's organization, asked of the server. On a later start, the
   * organization the state directory must belong to.
   */
  org: string | undefined;
  registrationKey: string | undefined;
  /** Without a registration key: sign in as a user and enroll as them (user-enrollment.ts). */
  login?: UserLogin | undefined;
  hostname: string;
  /** Published at enrollment, so the first endpoint check has nothing to change. */
  endpoints: Endpoint[];
  /** The routes the device requests (`--advertise-routes`), sent at enrollment for the same reason; default none. */
  advertiseCidrs?: readonly string[] | undefined;
  logger: Logger;
  fetch?: FetchLike | undefined;
}

export interface Enrolled {
  identity: DeviceIdentity;
  keys: WireGuardKeyPair;
  /** The server to use: the configured one, else the one enrolled with. */
  server: string;
  /** True when this start enrolled the device. */
  enrolled: boolean;
}

const ENROLL_BACKOFF = { initialMs: 1_000, maxMs: 30_000, resetAfterMs: Number.MAX_SAFE_INTEGER };

function refused(err: unknown): AgentFatalError | undefined {
  const what = errorMessage(err);
  if (err instanceof AuthError) {
    return new AgentFatalError('enrollment_refused', `the server refused the registration key (unknown, expired, used up or revoked): ${what}`, { cause: err });
  }
  if (err instanceof NotFoundError) {
    return new AgentFatalError('enrollment_refused', `the organization was not found (check --org, or leave it out: the registration key names its own): ${what}`, { cause: err });
  }
  if (err instanceof ConflictError && err.details?.['path'] === '/advertise_cidrs') {
    // An auto-approved route refused (it overlaps another device's, or the pool): the route, not the key, is the problem.
    return new AgentFatalError('enrollment_refused', `the server refused the enrollment: ${what} (check --advertise-routes)`, { cause: err });
  }
  if (err instanceof ConflictError) {
    return new AgentFatalError(
      'enrollment_refused',
      `the server refused the enrollment: ${what} (a device with this public key may already exist from an enrollment that did not finish; delete it, or start with an empty state directory)`,
      { cause: err },
    );
  }
  if (err instanceof ValidationError) return new AgentFatalError('enrollment_refused', `the server rejected the enrollment request: ${what}`, { cause: err });
  return undefined;
}

/**
 * Loads the identity, or enrolls (retrying transient failures with
 * exponential backoff and full jitter, never sooner than the server's
 * Retry-After, until `signal` aborts). Throws
 * AgentFatalError when enrollment is refused or the state directory doesn't
 * fit the settings.
 */
export async function ensureEnrolled(input: EnrollmentInput, signal: AbortSignal): Promise<Enrolled> {
  const { stateDir, logger } = input;
  let keys: WireGuardKeyPair;
  let identity: DeviceIdentity | undefined;
  try {
    await stateDir.ensure();
    const loaded = await stateDir.loadOrCreateKeyPair();
    keys = loaded.keys;
    if (loaded.created) logger.info({ public_key: keys.publicKey }, 'generated a WireGuard key pair');
    if (loaded.narrowed) logger.warn({ path: stateDir.privateKeyPath }, 'the private key file was readable by others; narrowed it to 0600');
    identity = await stateDir.loadIdentity();
  } catch (err) {
    if (err instanceof StateDirError) throw new AgentFatalError('state_dir', err.message, { cause: err });
    throw new AgentFatalError('state_dir', `the state directory ${stateDir.path} can't be used: ${errorMessage(err)}`, { cause: err });
  }

  if (identity) {
    if (identity.public_key !== keys.publicKey) {
      throw new AgentFatalError('state_dir', `${stateDir.identityPath} was enrolled with another key than ${stateDir.privateKeyPath} holds`);
    }
    const server = input.server ?? identity.server;
    if (input.org !== undefined) {
      const org = { id: identity.organization_id, name: identity.organization_name };
      await checkEnrolledOrg({ server, org, deviceToken: identity.device_token, ref: input.org, logger, fetch: input.fetch }, signal);
    }
    return { identity, keys, server, enrolled: false };
  }

  const { server } = input;
  // An id is used as given (enrollment itself checks it, also on servers before v1.3); a name, or none, is looked up.
  let org: OrgNames | undefined = input.org !== undefined && isOrgId(input.org) ? { id: input.org, name: undefined } : undefined;
  let { registrationKey } = input;
  if (server === undefined || (registrationKey === undefined && input.login === undefined)) {
    throw new AgentFatalError('config', 'the first start enrolls the device: --server and --registration-key (or --login --org) are required');
  }
  const client = new FleetplaneClient({ baseUrl: server, fetch: input.fetch });
  // A user's session enrolls as a registration key would (the bearer of the same route); only the device token is kept.
  const session = registrationKey === undefined && input.login !== undefined ? await signInToEnroll(client, input.login, input.org, signal) : undefined;
  registrationKey ??= session?.token;
  if (registrationKey === undefined) throw new AgentFatalError('config', 'no registration key');
  const backoff = new Backoff(ENROLL_BACKOFF);
  try {
    for (;;) {
      try {
        if (org === undefined) {
          if (session !== undefined && input.org !== undefined) org = await sessionOrganization(server, input.fetch, session, input.org, signal);
          else org = await keyOrganization(client, registrationKey, input.org, signal);
          logger.info({ organization_id: org.id, organization_name: org.name }, input.org === undefined ? "enrolling in the registration key's organization" : 'enrolling in the organization --org names');
        }
        const device = accepted(
          checkEnrolledDevice,
          await client.devices.enroll(
            org.id,
            registrationKey,
            {
              hostname: input.hostname,
              public_key: keys.publicKey,
              endpoints: input.endpoints,
              ...(input.advertiseCidrs?.length ? { advertise_cidrs: [...input.advertiseCidrs] } : {}),
            },
            { signal },
          ),
          'enrollment answer',
        );
        if (device.organization_id !== org.id || device.public_key !== keys.publicKey) {
          throw new InvalidReceivedError('enrollment answer', 'it is for another organization or public key than the request');
        }
        identity = {
          device_id: device.id,
          organization_id: device.organization_id,
          ...(org.name === undefined ? {} : { organization_name: org.name }),
          device_token: device.device_token,
          public_key: keys.publicKey,
          server,
          enrolled_at: new Date().toISOString(),
          // An older server sends no expiry: its tokens never expire.
          device_token_expires_at: device.device_token_expires_at ?? null,
          device_token_issued_at: device.created_at,
        };
        break;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof AgentFatalError) throw err;
        // The server may have enrolled the device already: enrolling again would only conflict.
        if (err instanceof InvalidReceivedError) throw new AgentFatalError('enrollment_refused', `${err.message}; nothing was saved`, { cause: err });
        const fatal = session ? refusedUser(err) : refused(err);
        if (fatal) throw fatal;
        if (!isRetryable(err)) throw err;
        const delayMs = backoff.next(0, retryAfterOf(err));
        logRetry(logger, err, { delayMs: Math.round(delayMs) }, 'enrollment failed; retrying');
        await sleep(delayMs, signal);
        if (signal.aborted) throw signal.reason;
      }
    }
  } finally {
    if (session) await endSession(client, session, logger);
  }
  try {
    await stateDir.saveIdentity(identity);
  } catch (err) {
    throw new AgentFatalError(
      'state_dir',
      `enrolled as device ${identity.device_id}, but writing ${stateDir.identityPath} failed: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  logger.info({ device_id: identity.device_id, organization_id: identity.organization_id }, 'enrolled');
  return { identity, keys, server, enrolled: true };
}
