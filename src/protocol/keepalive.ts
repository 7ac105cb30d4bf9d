/**
 * The tunnel's keepalive rule, one per side of a tunnel (docs/protocol.md
 * "Agent tunnel"): rounds of TUNNEL_PING_INTERVAL_MS; a side that heard
 * nothing from the other during a round pings (a WebSocket control frame);
 * one that still heard nothing a round after its ping gives the connection
 * up. Anything received counts as heard: frames, pings and pongs.
 */
export class KeepaliveRounds {
  #heard = true;
  #pinged = false;

  /** Something arrived from the other side. */
  heard(): void {
    this.#heard = true;
  }

  /** Ends a round: `quiet` (heard from: nothing to send), `ping` (send one), or `dead` (silent since the last ping). */
  round(): 'quiet' | 'ping' | 'dead' {
    if (this.#heard) {
      this.#heard = false;
      this.#pinged = false;
      return 'quiet';
    }
    if (this.#pinged) return 'dead';
    this.#pinged = true;
    return 'ping';
  }
}
