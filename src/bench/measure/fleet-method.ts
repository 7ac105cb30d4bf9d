import { ROUTES } from '../../protocol/index.js';
import { PUT_CONNECTIONS_PER_WORKER } from '../load/agent-pool.js';
import { STREAM_SILENCE_MS } from '../load/agent-watch.js';
import { CHANGES, ackTimeoutMs } from './change-loop.js';
import { RECEIVE_TIMEOUT_MS } from './fleet-catch-up.js';
import { CHURN_EVENT_BYTES_LIMIT, CHURN_SHARE } from './churn-accounting.js';
import { FLEET_TARGETS } from './fleet-targets.js';
import { POLL_INTERVAL_MS } from './convergence-follower.js';
import { PACED_CONCURRENCY } from './join-run.js';
import { POLICY_GROUPS, POLICY_RULES_PER_GROUP } from './policy-document.js';

/** How each figure of `fleet` is measured, printed with the results (and kept in the result file). */
export function fleetMethod(idleSeconds: number): string[] {
  return [
    'method, agents: each simulated agent (load worker processes, not the server\'s) holds, with its own device token, a watch stream ' +
      '(POST /events [device, security-group, organization], raw HTTP/1.1, per-kind tails and revisions, bookmarks; resumes with per-kind ' +
      'gt_revision and at_tail: true after the SDK\'s backoff, or a 429/503\'s Retry-After + jitter; like the SDK, it gives up a fleetplane ' +
      `stream silent for 3 bookmark intervals, ${STREAM_SILENCE_MS / 1000} s, counted as watch.silent: a connection can die with no FIN or reset reaching the agent) ` +
      'and a tunnel (ws: answers ping frames ' +
      'and the ping request). When its seen revision rises (checked once per read of its watch socket) it ACKs {applied_revision: R, apply_error: null, …} by a tunnel status frame ' +
      '(as the agent does: confirmed by status_ack until the server acked one on that tunnel connection, then sent with ack: "errors" and ' +
      'counted once sent; every new connection sends it again) or by PUT .../status (confirmed by its 200; PUTs share ' +
      `${PUT_CONNECTIONS_PER_WORKER} keep-alive sockets per load worker). ` +
      'Sockets bind to 127.0.x.y source addresses and close with a TCP reset.',
    `method (a): N fresh agents (no revision) join ${PACED_CONCURRENCY} at a time (an agent holds its slot until its watch reached every tail) ` +
      'and all at once; time from the first start to the last agent with all three tails. The raw floor (src/bench/raw-floor, node:http) ' +
      'answers the same agents with the exact bytes of one fleetplane list (captured first, one chunk per line), same N, same run; ' +
      'raw floor, then fleetplane, per mode. Errors: non-200/101 answers, refused or reset connections, broken streams, error events.',
    '(b): SIGTERM to the server process group; the same command on the same data (the embedded PostgreSQL\'s data directory, not --memory; or the same PostgreSQL ' +
      'database) and port. Resumed: the watch answered 200 with every kind at_tail (opened after the new process was spawned); timed from ' +
      'its "listening" line. Error responses: any non-success HTTP answer to an agent; refused/reset connections are counted apart.',
    `(c)/(f): ${CHANGES} PATCHes of a security group's description, one at a time; each waits, concurrently and bounded (received 30 s; ` +
      `ACKs and convergence ${ackTimeoutMs(0) / 1000} s + 2 ms per agent, 2 s once a change got no ACK at all), until every agent has the revision, every ` +
      `agent's ACK is confirmed (or sent, see above), and GET .../convergence reports at_head = N at that revision (the ?watch=true stream when served, else ` +
      `a poll every ${POLL_INTERVAL_MS} ms, admin token). All times from sending the PATCH. CPU: the server's process tree from /proc/<pid>/stat ` +
      '(10 ms ticks), between the PATCH and the last wait; it includes the PATCH and following the convergence. Statements: deltas of ' +
      'fleetplane_db_queries_total by statement label over the same window; "for the ACKs" is the INSERT/UPDATE/DELETE statements (a ' +
      "status batch is one) minus the write's own (measured alone before any agent connected) and the idle write rate × the window.",
    `(d): ${idleSeconds} s with N agents connected and nothing changing: INSERT/UPDATE/DELETE statements (fleetplane_db_queries_total; ` +
      'the label is a statement\'s first keyword, or the first INSERT/UPDATE/DELETE of its CTEs, see src/server/db/instrumented.ts) and server CPU (/proc).',
    '(e): the server\'s resident memory (whole process tree) with N agents connected, read after (d)\'s idle window with no forced GC ' +
      'before it (steady state: the agents joined all at once, then sat connected), minus before any agent connected (read the same way: ' +
      'after seeding, an idle window as long, no forced GC), / N; also after a full GC (SIGUSR2 → gc(), sent to the Node.js processes only), and as read just after the join (the herd\'s ' +
      'garbage not yet collected). The verdict uses the steady PSS (/proc/<pid>/smaps_rollup: a page shared by several processes of the tree ' +
      'counts once in all); summed VmRSS is shown too.',
    `(g), after (b): ${Math.round(CHURN_SHARE * 100)}% of the agents (N × ${CHURN_SHARE}, spread evenly over the load workers) each PATCH ` +
      `${ROUTES.device} of their own device with their device token, through their load worker's keep-alive pool, all at once, with ` +
      'the body the agent\'s endpoint publisher sends when only its STUN mapping moved: {endpoints: [stun, local v4, local v6]} built by the ' +
      'agent\'s publishedEndpoints (symmetric_nat unchanged, so left out). Unmeasured before it, the same agents publish a first STUN endpoint ' +
      'the same way and the fleet converges, so that the step changes one. ACKs go by tunnel frame (by the first --ack mode when tunnel was not ' +
      `asked for). Waits, concurrently and bounded (received ${RECEIVE_TIMEOUT_MS / 1000} s, ACKs and convergence as in (c)), until every agent has seen the highest ` +
      'revision the PATCHes took (the organization\'s after the last PATCH), every agent\'s ACK of it is confirmed or sent, and the convergence ' +
      'reports at_head = N at it; convergence is timed as in (c), from sending the PATCH that took that revision (all were sent within a few ms), ' +
      `against (c)'s limit (${FLEET_TARGETS.convergedMs} ms). Events: the change/patch/delete lines of every kind the agents' watch streams received between ` +
      'the agents\' counters read before the PATCHes and after the last wait (tails, bookmarks and keepalives not counted), ÷ (N watchers × changes ' +
      'answered 200): the watch protocol does not coalesce (docs/protocol.md "Watch": each change is its own event), so ' +
      `exactly 1.0 passes. Bytes: each line with its newline, without chunk framing, mean over the step (≤ ${CHURN_EVENT_BYTES_LIMIT} B passes), ` +
      'beside the PATCH answers\' devices encoded as whole-object watch lines (what a watch without patches gets). The simulated agents ask ' +
      'for patches, as the agent\'s informers do. Re-lists: watch requests listing any kind from gt_revision 0, plus 410 ' +
      'answers to a resume (the simulated agents never GET a list); 0 passes. An agent ACKs at most once per read of its watch socket ' +
      '(the real agent\'s status reporter sends at most one status per second, which is not simulated). CPU and statements: as in (c), over the ' +
      'step\'s window.',
    `(h), after (g), same fleet, ACKs as in (g): every device carries one of ${POLICY_GROUPS} tags from its creation (tag:t000…, device i ` +
      `tag i mod ${POLICY_GROUPS}). Untimed: GET ${ROUTES.policy} (the document generated from the objects) and PUT it back unchanged with its ` +
      'ETag in If-Match (the organization is managed; its group object is tombstoned, one more revision); then PUT the bench\'s document ' +
      `(${POLICY_GROUPS} groups g000…, each applies_to one tag, ${POLICY_RULES_PER_GROUP} rules each: 6 inbound, TCP/UDP, one port each, from ` +
      'another group\'s tag and a /24; 2 outbound, TCP/UDP, a port range, to every address; one passing allow test per group), each ' +
      `followed by the fleet converging on the head after the PUT's answer. Timed: ${CHANGES} PUTs (application/yaml, If-Match), one at a ` +
      'time, each moving every port of the document by one more than the last (so every rule of every group changes; the answer must name ' +
      `all ${POLICY_GROUPS} groups), waiting as (c) does for one change (same bounds) on the revision the PUT answered; convergence timed from ` +
      `sending the PUT, against (c)'s limit (${FLEET_TARGETS.convergedMs} ms, median); server CPU and statements over the same window as (c)'s, ` +
      `against (c)'s ${FLEET_TARGETS.cpuSecondsPerChange} s (median). Per apply, events and re-lists are counted as in (g) over the window: the ` +
      'organization\'s head must move by exactly one revision (the document is one change event) and every agent\'s watch must receive ' +
      'exactly one event (1.0 per watcher; its bytes shown, not a target: the event carries the whole compiled policy); 0 re-lists passes.',
    'targets are stated for 10,000 agents; at other N they are shown for orientation. 10,000 agents hold 20,000+ sockets on the server, ' +
      'over one process\'s 20,000 open files: the server runs serve --workers. On the embedded storage the server\'s process tree ' +
      'includes its PostgreSQL, so its CPU and RSS count the database too.',
  ];
}
