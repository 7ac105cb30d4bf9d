/**
 * The checks of everything the agent receives from its server, one per
 * kind of answer or object, each compiled once from the protocol's schema.
 * Fields the protocol added after v1.0 that the agent can do without may
 * be absent (an older server's objects); they are filled with what their
 * absence meant, so every checked value is of the protocol's type.
 */
import { Type, type Static, type TObject, type TUnsafe } from '@sinclair/typebox';
import {
  AgentRequestFrame as AgentRequestFrameSchema,
  DeviceObject,
  DeviceTokenRenewal,
  EnrolledDevice,
  Network,
  NoAgentParams,
  Organization,
  RelayListSchema,
  SecurityGroup,
  Uuid,
  type RelayList,
  type AgentRequestFrame,
} from '../../protocol/index.js';
import { compileCheck, type Check } from './schema-check.js';

/** `schema` with `keys` no longer required. */
function relaxRequired<S extends TObject, K extends keyof Static<S> & string>(
  schema: S,
  keys: readonly K[],
): TUnsafe<Omit<Static<S>, K> & Partial<Pick<Static<S>, K>>> {
  const plain: Record<string, unknown> = Object.fromEntries(Object.entries(schema));
  return Type.Unsafe({ ...plain, required: (schema.required ?? []).filter((k) => !(keys as readonly string[]).includes(k)) });
}

/** A bearer token: one run of visible ASCII, so it can't break the header or the identity file it goes to. */
function tokenProblem(token: string, path: string): string | undefined {
  return /^[\x21-\x7e]{1,4096}$/.test(token) ? undefined : `${path} is not a token (1 to 4096 visible ASCII characters)`;
}

function mapped<A, B>(check: Check<A>, map: (value: A) => B): Check<B> {
  return (value) => {
    const result = check(value);
    return result.ok ? { ok: true, value: map(result.value) } : result;
  };
}

const deviceShape = compileCheck(relaxRequired(DeviceObject, ['approved_cidrs', 'ephemeral', 'tags']));

/** A device of a watch event or a list (the status a list adds is not checked: the agent doesn't read others'). */
export const checkDevice: Check<DeviceObject> = mapped(deviceShape, (d) => ({
  ...d,
  approved_cidrs: d.approved_cidrs ?? [],
  ephemeral: d.ephemeral ?? false,
  tags: d.tags ?? [],
}));

const securityGroupShape = compileCheck(relaxRequired(SecurityGroup, ['name']));

/** A security group; one from a server before v1.12 has no name. */
export const checkSecurityGroup: Check<SecurityGroup> = mapped(securityGroupShape, (g) => ({ ...g, name: g.name ?? null }));

const organizationShape = compileCheck(
  Type.Unsafe<Omit<Organization, 'network' | 'audit_readable_by_read' | 'tag_owners'> & {
    network: Omit<Network, 'auto_approve_cidrs' | 'auto_approvers'> & Partial<Pick<Network, 'auto_approve_cidrs' | 'auto_approvers'>>;
    audit_readable_by_read?: boolean;
    tag_owners?: Organization['tag_owners'];
  }>({
    ...Object.fromEntries(Object.entries(relaxRequired(Organization, ['audit_readable_by_read', 'tag_owners']))),
    properties: { ...Organization.properties, network: relaxRequired(Network, ['auto_approve_cidrs', 'auto_approvers']) },
  }),
);

export const checkOrganization: Check<Organization> = mapped(organizationShape, (o) => ({
  ...o,
  network: { ...o.network, auto_approve_cidrs: o.network.auto_approve_cidrs ?? [], auto_approvers: o.network.auto_approvers ?? [] },
  audit_readable_by_read: o.audit_readable_by_read ?? false,
  tag_owners: o.tag_owners ?? {},
}));

const enrolledShape = compileCheck(relaxRequired(EnrolledDevice, ['approved_cidrs', 'ephemeral', 'tags', 'device_token_expires_at']), (d) =>
  tokenProblem(d.device_token, '/device_token'),
);

/** The answer to an enrollment. An older server sends no `device_token_expires_at`: its tokens never expire. */
export const checkEnrolledDevice: Check<EnrolledDevice> = mapped(enrolledShape, (d) => ({
  ...d,
  approved_cidrs: d.approved_cidrs ?? [],
  ephemeral: d.ephemeral ?? false,
  tags: d.tags ?? [],
  device_token_expires_at: d.device_token_expires_at ?? null,
}));

/** `GET /api/registration_key`: the agent reads only the organization it enrolls in, and its name (absent before v1.20). */
export const checkOwnRegistrationKey: Check<{ organization_id: string; organization_name?: string }> = compileCheck(
  Type.Object({ organization_id: Uuid, organization_name: Type.Optional(Type.String()) }),
);

export const checkTokenRenewal: Check<DeviceTokenRenewal> = compileCheck(DeviceTokenRenewal, (r) => tokenProblem(r.device_token, '/device_token'));

function relayUrlProblem(list: RelayList): string | undefined {
  for (const [i, entry] of list.items.entries()) {
    if (entry.url === null) continue;
    let protocol: string;
    try {
      protocol = new URL(entry.url).protocol;
    } catch {
      return `/items/${i}/url is not a URL`;
    }
    if (protocol !== 'http:' && protocol !== 'https:') return `/items/${i}/url is not an http(s) URL`;
  }
  return undefined;
}

/** One relay list of `GET /api/relays?watch=true`. */
export const checkRelayList: Check<RelayList> = compileCheck(RelayListSchema, relayUrlProblem);

/** The params of the methods every agent serves (`ping`, `status`, `force-sync`): none. */
export const checkNoParams: Check<Static<typeof NoAgentParams>> = compileCheck(NoAgentParams);

/** A request frame of the tunnel, before its method runs. */
export const checkRequestFrame: Check<AgentRequestFrame> = compileCheck(AgentRequestFrameSchema);
