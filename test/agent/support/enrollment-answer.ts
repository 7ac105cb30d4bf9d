/** Answers of a fake server to an agent's enrollment. */

/** An enrollment answer as the server sends it (the agent checks it against the protocol's schema). */
export function enrolledDevice(publicKey: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const t = '2026-01-01T00:00:00.000Z';
  return {
    id: '00000000-0000-4000-8000-000000000001',
    organization_id: '00000000-0000-4000-8000-0000000000aa',
    hostname: 'h',
    public_key: publicKey,
    advertise_cidrs: [],
    approved_cidrs: [],
    endpoints: [],
    relay: false,
    symmetric_nat: false,
    security_group_id: null,
    tunnel_ip: '100.64.0.1',
    ephemeral: false,
    revision: 1,
    created_at: t,
    updated_at: t,
    status: { online: false, last_seen: null, applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null, peers: [], peers_truncated: false },
    device_token: 'fpd_secret',
    device_token_expires_at: null,
    ...overrides,
  };
}
