/**
 * `agent --org`: an organization by id or by name. What the agent can ask
 * names it: a registration key its own organization (`GET
 * /api/registration_key`, `organization_name` since protocol v1.20), a
 * user's session the organizations it lists, a device token its own
 * organization.
 */
import type { Logger } from 'pino';
import { AuthError, Backoff, FleetplaneClient, NotFoundError, isRetryable, retryAfterOf, type FetchLike } from '../../client/index.js';
import { FORMATS, type CreatedSession } from '../../protocol/index.js';
import { AgentFatalError, errorMessage } from '../errors.js';
import { accepted, checkOrganization, checkOwnRegistrationKey } from '../received/index.js';
import { logRetry } from '../transient.js';
import { sleep } from '../../util/sleep.js';

/** An organization as `--org` may name it; `name` undefined where the server didn't say. */
export interface OrgNames {
  id: string;
  name: string | undefined;
}

/** Ids are lower-case UUIDs; anything else `--org` takes as a name. */
export const isOrgId = (ref: string): boolean => FORMATS.uuid(ref);

/** Whether `ref` (an `--org` value) is the organization's id or its name. */
export function namesOrg(ref: string, org: OrgNames): boolean {
  return ref === org.id || (org.name !== undefined && ref === org.name);
}

const label = (org: OrgNames): string => (org.name === undefined ? org.id : `${org.name} (${org.id})`);

/**
 * The organization a registration key enrolls in, checked against `ref`
 * when given. A fatal config error when `ref` is another organization, or a
 * name and the server doesn't say the key's organization's name (before
 * v1.20) or even its id (before v1.3).
 */
export async function keyOrganization(client: FleetplaneClient, key: string, ref: string | undefined, signal: AbortSignal): Promise<OrgNames> {
  let own;
  try {
    own = accepted(checkOwnRegistrationKey, await client.registrationKeys.own(key, { signal }), 'registration key');
  } catch (err) {
    if (err instanceof NotFoundError) {
      const what = ref === undefined ? 'set --org' : 'set --org to its id';
      throw new AgentFatalError('config', `the server can't tell the registration key's organization (it predates protocol v1.3): ${what}`, { cause: err });
    }
    throw err;
  }
  const org = { id: own.organization_id, name: own.organization_name };
  if (ref === undefined || namesOrg(ref, org)) return org;
  if (org.name === undefined && !isOrgId(ref)) {
    throw new AgentFatalError('config', `--org ${JSON.stringify(ref)}: the server (before protocol v1.20) doesn't tell the name of the registration key's organization; give its id, ${org.id}, or leave --org out`);
  }
  throw new AgentFatalError('config', `--org ${JSON.stringify(ref)} is not the registration key's organization, ${label(org)}: give its id or name, or leave --org out`);
}

/** The organization named `ref` among those the signed-in user's session lists (an id is taken as it is: enrollment checks it). */
export async function sessionOrganization(
  server: string,
  fetch: FetchLike | undefined,
  session: CreatedSession,
  ref: string,
  signal: AbortSignal,
): Promise<OrgNames> {
  if (isOrgId(ref)) return { id: ref, name: undefined };
  const client = new FleetplaneClient({ baseUrl: server, token: session.token, fetch });
  const { items } = await client.organizations.list({ signal });
  const found = items.filter((o) => o.name === ref);
  const [only, second] = found;
  if (only === undefined) throw new AgentFatalError('enrollment_refused', `--org ${JSON.stringify(ref)}: the user is a member of no organization of that name`);
  if (second !== undefined) {
    throw new AgentFatalError('config', `--org ${JSON.stringify(ref)} is ambiguous: ${found.length} organizations have that name (${found.map((o) => o.id).join(', ')}); give an id`);
  }
  return { id: only.id, name: only.name };
}

export interface EnrolledOrgCheck {
  server: string;
  /** The organization the state directory's identity is enrolled in, and its name as saved then (absent in state written before). */
  org: OrgNames;
  deviceToken: string;
  ref: string;
  logger: Logger;
  fetch?: FetchLike | undefined;
}

const CHECK_BACKOFF = { initialMs: 1_000, maxMs: 30_000, resetAfterMs: Number.MAX_SAFE_INTEGER };

/**
 * A later start's `--org` against the organization the state directory is
 * enrolled in: its id, the name saved at enrollment, or else its name now,
 * as the device token reads it (an organization may have been renamed;
 * transient failures retried until `signal` aborts). A fatal state_dir
 * error names the organization otherwise.
 */
export async function checkEnrolledOrg(check: EnrolledOrgCheck, signal: AbortSignal): Promise<void> {
  const { ref, org } = check;
  const refused = (current: OrgNames) =>
    new AgentFatalError('state_dir', `the state directory belongs to organization ${label(current)}, not ${ref}; use another --state-dir to enroll there`);
  if (namesOrg(ref, org)) return;
  if (isOrgId(ref)) throw refused(org);
  const client = new FleetplaneClient({ baseUrl: check.server, token: check.deviceToken, fetch: check.fetch });
  const backoff = new Backoff(CHECK_BACKOFF);
  for (;;) {
    try {
      const current = accepted(checkOrganization, await client.organizations.get(org.id, { signal }), 'organization');
      const now = { id: org.id, name: current.name };
      if (namesOrg(ref, now)) return;
      throw refused(now);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (err instanceof AgentFatalError) throw err;
      if (err instanceof AuthError || err instanceof NotFoundError) {
        throw new AgentFatalError('state_dir', `can't tell whether --org ${ref} names organization ${org.id}, which the state directory belongs to: the server refused the device token (${errorMessage(err)}); give the id`, { cause: err });
      }
      if (!isRetryable(err)) throw err;
      const delayMs = backoff.next(0, retryAfterOf(err));
      logRetry(check.logger, err, { delayMs: Math.round(delayMs) }, "reading the organization's name for --org failed; retrying");
      await sleep(delayMs, signal);
      if (signal.aborted) throw signal.reason;
    }
  }
}
