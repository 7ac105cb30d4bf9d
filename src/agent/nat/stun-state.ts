/**
 * What the agent knows of its WireGuard port's public mapping, as the
 * endpoint publisher consumes it (docs/protocol.md "STUN").
 */
export type StunState =
  /** Not known yet (the first probe has not finished): publish what the server already holds. */
  | { kind: 'pending' }
  /** Nothing to publish: STUN is off here, or no probe was answered for too long. */
  | { kind: 'off' }
  /** The mapping (`ip:port`) and whether it varies by destination. */
  | { kind: 'mapped'; endpoint: string; symmetric: boolean };

export function sameStunState(a: StunState, b: StunState): boolean {
  if (a.kind !== 'mapped' || b.kind !== 'mapped') return a.kind === b.kind;
  return a.endpoint === b.endpoint && a.symmetric === b.symmetric;
}
