import { PUT_CONNECTIONS_PER_WORKER } from '../load/agent-pool.js';
import { STREAM_SILENCE_MS } from '../load/agent-watch.js';
import { CHANGES, ackTimeoutMs } from './change-loop.js';
import { POLL_INTERVAL_MS } from './convergence-follower.js';
import { PACED_CONCURRENCY } from './join-run.js';

/** How each figure of `fleet` is measured, printed with the results (and kept in the result file). */
export function fleetMethod(idleSeconds: number): string[] {
  return [
    'method, agents: each simulated agent (load worker processes, not the server\'s) holds, with its own device token, a watch stream ' +
      '(POST /events [device, security-group, organization], raw HTTP/1.1, per-kind tails and revisions, bookmarks; resumes with per-kind ' +
      'gt_revision and at_tail: true after the SDK\'s backoff, or a 429/503\'s Retry-After + jitter; like the SDK, it gives up a fleetplane ' +
      `stream silent for 3 bookmark intervals, ${STREAM_SILENCE_MS / 1000} s, counted as watch.silent: a connection can die with no FIN or reset reaching the agent) ` +
      'and a tunnel (ws: answers ping frames ' +
      'and the ping request). When its seen revision rises it ACKs {applied_revision: R, apply_error: null, …} by a tunnel status frame ' +
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
    'targets are stated for 10,000 agents; at other N they are shown for orientation. 10,000 agents hold 20,000+ sockets on the server, ' +
      'over one process\'s 20,000 open files: the server runs serve --workers. On the embedded storage the server\'s process tree ' +
      'includes its PostgreSQL, so its CPU and RSS count the database too.',
  ];
}
