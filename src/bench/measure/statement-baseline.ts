import { paths } from '../../protocol/index.js';
import { ApiCallError, type FleetApi } from '../http-api.js';
import type { BenchPostgres } from '../server/postgres.js';
import type { RestartableServer } from '../server/restartable-server.js';
import { totalStatements, type StatementCounts } from './db-statements.js';
import { sampleServer, serverDelta } from './fleet-probe.js';

/**
 * What a change costs the database without agents, measured on the same
 * server before any agent connects, so that the statements an ACK costs can
 * be told apart from the write's own.
 */
export interface StatementBaseline {
  /** Statements of one security-group PATCH (by label, per PATCH). */
  perWrite: StatementCounts;
  perWriteTotal: number;
  /** Statements of one `GET .../convergence`. */
  perPoll: number;
}

const SAMPLES = 4;

/** PATCHes the security group's description SAMPLES times and reads the convergence SAMPLES times. */
export async function measureStatementBaseline(server: RestartableServer, api: FleetApi, pg: BenchPostgres | undefined, org: string, groupId: string): Promise<StatementBaseline> {
  const s0 = await sampleServer(server, api, pg);
  for (let i = 0; i < SAMPLES; i++) await patchGroup(api, org, groupId, `baseline-${i}`);
  const s1 = await sampleServer(server, api, pg);
  for (let i = 0; i < SAMPLES; i++) {
    const res = await api.request('GET', paths.convergence(org));
    if (res.status !== 200) throw new ApiCallError(res.status, res.body, 'convergence');
  }
  const s2 = await sampleServer(server, api, pg);
  const writes = serverDelta(s1, s0).statements;
  const perWrite: StatementCounts = {};
  for (const [k, v] of Object.entries(writes)) perWrite[k] = v / SAMPLES;
  return { perWrite, perWriteTotal: totalStatements(perWrite), perPoll: totalStatements(serverDelta(s2, s1).statements) / SAMPLES };
}

/** PATCHes the security group's description; returns the new revision and when the request was sent. */
export async function patchGroup(api: FleetApi, org: string, groupId: string, description: string): Promise<{ revision: number; sentAt: number; doneAt: number }> {
  const res = await api.request('PATCH', paths.securityGroup(org, groupId), { description });
  if (res.status !== 200) throw new ApiCallError(res.status, res.body, 'patch security group');
  const revision = Number((JSON.parse(res.body) as { revision?: unknown }).revision);
  return { revision, sentAt: res.sentAt, doneAt: res.doneAt };
}
