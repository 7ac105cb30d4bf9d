/**
 * An organization's policy document (docs/protocol.md "Policy document"):
 * reading it (the text as sent, or one generated from the objects), applying
 * one as a single revision of the organization, and handing access back to
 * the objects. What the document compiles to lives in the organization
 * object, so agents converge on one change event.
 */
import { createHash } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { Database, Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Network, Organization, PolicyApplyResult, PolicyDocument, PolicyTest, SecurityGroup } from '../../protocol/index.js';
import { ApiError, notFound } from '../errors.js';
import { getObject, updateObject, type StoredValue } from './objects.js';
import { writeInOrg } from './org-write.js';
import { fieldChanges } from '../audit/changes.js';
import { recordAudit } from '../audit/record.js';
import { sameJson } from '../../util/same-json.js';
import { checkNetworkPrefixes, checkNetworkRoutes } from './route-approval.js';
import { parsePolicy, type PolicyProblem } from '../policy/policy-parse.js';
import { compilePolicy } from '../policy/policy-compile.js';
import { failingPolicyTests } from '../policy/policy-tests.js';
import { currentView, documentName, policyChanges, renderDocument } from '../policy/policy-view.js';
import { restoreGroupObjects, retireGroupObjects } from './policy-groups.js';

type StoredOrganization = Organization & StoredValue;

/** The document an organization has: `managed` when one was applied, else generated from its objects. */
export interface PolicyRead {
  managed: boolean;
  text: string;
  /** `"<16 hex>"`: a hash of `text`. */
  etag: string;
  revision: number;
}

export function policyEtag(text: string): string {
  return `"${createHash('sha256').update(text).digest('hex').slice(0, 16)}"`;
}

export async function liveGroups(q: Queryable, orgId: string): Promise<SecurityGroup[]> {
  const rows = await q.query<{ value: SecurityGroup }>(`SELECT value FROM objects WHERE org_id = $1 AND kind = 'security-group' AND NOT deleted`, [orgId]);
  return rows.map((r) => r.value);
}

async function storedText(q: Queryable, orgId: string): Promise<string | undefined> {
  const rows = await q.query<{ text: string }>('SELECT text FROM policy_documents WHERE org_id = $1', [orgId]);
  return rows[0]?.text;
}

/**
 * The tests of the documents this replica applied last, by ETag: the next
 * apply diffs against them without parsing the stored text again (YAML
 * parsing is most of an apply's own CPU). At the limit the oldest is
 * dropped; a miss parses the text.
 */
const recentTests = new Map<string, PolicyTest[]>();
const RECENT_TESTS_LIMIT = 16;

function rememberTests(etag: string, tests: PolicyTest[]): void {
  recentTests.delete(etag);
  recentTests.set(etag, tests);
  for (const oldest of recentTests.keys()) {
    if (recentTests.size <= RECENT_TESTS_LIMIT) break;
    recentTests.delete(oldest);
  }
}

/** The tests of a stored document (it parsed when it was applied). */
function testsOf(text: string | undefined): PolicyTest[] {
  if (text === undefined) return [];
  const known = recentTests.get(policyEtag(text));
  if (known) return known;
  const value = parseYaml(text) as PolicyDocument | null;
  return value?.tests ?? [];
}

async function current(q: Queryable, org: StoredOrganization): Promise<{ managed: boolean; text: string; groups: SecurityGroup[] }> {
  const groups = org.policy ? [] : await liveGroups(q, org.id);
  const stored = org.policy ? await storedText(q, org.id) : undefined;
  if (stored !== undefined) return { managed: true, text: stored, groups };
  // The newest revision the text reflects, so it reads the same until one of them changes.
  const revision = Math.max(org.revision, ...groups.map((g) => g.revision));
  return { managed: false, text: renderDocument(currentView(org, groups, []), revision), groups };
}

export async function readPolicy(q: Queryable, orgId: string): Promise<PolicyRead> {
  const org = await getObject<StoredOrganization>(q, orgId, 'organization', orgId);
  if (!org) throw notFound('organization');
  const { managed, text } = await current(q, org);
  return { managed, text, etag: policyEtag(text), revision: org.revision };
}

function invalid(problem: PolicyProblem): ApiError {
  const where = problem.line > 0 ? `line ${problem.line}, column ${problem.column}: ` : '';
  return new ApiError('policy_invalid', `${where}${problem.message}`, { path: problem.path, line: problem.line, column: problem.column });
}

/** The network checks every organization write runs, their paths made the document's. */
function checkNetwork(before: Network, after: Network, locate: (path: string) => { line: number; column: number }): void {
  try {
    checkNetworkPrefixes(after);
    checkNetworkRoutes(before, after);
  } catch (err) {
    const path = err instanceof ApiError ? err.details?.['path'] : undefined;
    if (!(err instanceof ApiError) || typeof path !== 'string') throw err;
    const at = path.replace(/^\/network\/auto_approvers/, '/auto_approvers');
    throw invalid({ path: at, ...locate(at), message: `${at}: ${err.message}` });
  }
}

function sameEtag(ifMatch: string, etag: string): boolean {
  return ifMatch.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === etag);
}

/**
 * A document may not drop a group devices name by id (as deleting a group
 * object in use is refused): 409 naming the group and how many devices use it.
 */
async function checkGroupsInUse(q: Queryable, orgId: string, before: readonly { id: string; name: string | null }[], after: readonly { id: string }[]): Promise<void> {
  const kept = new Set(after.map((g) => g.id));
  const dropped = before.filter((g) => !kept.has(g.id));
  if (dropped.length === 0) return;
  const rows = await q.query<{ id: string; n: number }>(
    `SELECT value->>'security_group_id' AS id, count(*)::int AS n FROM objects
      WHERE org_id = $1 AND kind = 'device' AND NOT deleted AND value->>'security_group_id' = ANY($2::text[])
      GROUP BY 1 ORDER BY 1 LIMIT 1`,
    [orgId, dropped.map((g) => g.id)],
  );
  const used = rows[0];
  if (!used) return;
  const name = documentName(dropped.find((g) => g.id === used.id) ?? { id: used.id, name: null });
  throw new ApiError('conflict', `security group ${name} is used by ${used.n} device(s) by id; move them to another group (or bind them by tag with applies_to) first`, {
    path: `/security_groups/${name}`,
    devices: Number(used.n),
  });
}

export interface ApplyOptions {
  ifMatch?: string | undefined;
  dryRun?: boolean;
}

/**
 * Applies `text` to the organization as one revision, or checks it without
 * writing (`dryRun`). 400 `policy_invalid` (with the place), 412 on a stale
 * `ifMatch`, 422 `policy_test_failed`: nothing changes. A document that
 * changes nothing the organization holds writes no revision (its text is
 * still kept).
 */
export async function applyPolicy(db: Database, bus: SignalBus, orgId: string, text: string, options: ApplyOptions = {}): Promise<PolicyApplyResult> {
  const parsed = parsePolicy(text);
  if (!parsed.ok) throw invalid(parsed.problem);
  const { document, locate } = parsed;
  const dryRun = options.dryRun === true;
  const etag = policyEtag(text);
  const result = await writeInOrg(db, bus, orgId, async (w): Promise<PolicyApplyResult> => {
    const org = await w.lock<StoredOrganization>('organization', orgId);
    const now = await current(w.tx, org);
    const currentEtag = policyEtag(now.text);
    if (options.ifMatch !== undefined && !sameEtag(options.ifMatch, currentEtag)) {
      throw new ApiError('precondition_failed', `If-Match ${options.ifMatch} is not the document's ETag ${currentEtag}: read it again`, { etag: currentEtag });
    }
    const source = org.policy ? org.policy.groups : now.groups;
    const compiled = compilePolicy(document, new Map(source.map((g) => [documentName(g), g.id])));
    if (!compiled.ok) throw invalid({ ...compiled.problem, ...locate(compiled.problem.path), message: `${compiled.problem.path}: ${compiled.problem.message}` });
    await checkGroupsInUse(w.tx, orgId, source, compiled.policy.groups);
    const network: Network = { ...org.network, ...compiled.policy.network };
    checkNetwork(org.network, network, locate);
    const failures = failingPolicyTests(document);
    const total = document.tests?.length ?? 0;
    if (failures.length > 0) {
      const [first] = failures;
      const what = first ? `test ${first.index} (${first.test.from} → ${first.test.to} ${first.test.port}, expect ${first.test.expect}) fails: ${first.reason}` : '';
      throw new ApiError('policy_test_failed', `${failures.length} of ${total} tests fail; ${what}`, { failures });
    }
    const next: StoredOrganization = { ...org, tag_owners: compiled.policy.tag_owners, network, policy: { groups: compiled.policy.groups } };
    const changes = policyChanges(currentView(org, now.groups, testsOf(now.managed ? now.text : undefined)), currentView(next, [], document.tests ?? []));
    const tests = { total, passed: total };
    if (dryRun) return { managed: now.managed, applied: false, dry_run: true, etag, revision: org.revision, changes, tests };
    let revision = org.revision;
    if (!sameJson(next, org)) {
      revision = await w.revision();
      await updateObject(w.tx, { ...next, revision, updated_at: new Date().toISOString() });
      await recordAudit(w.tx, { orgId, action: 'update', kind: 'organization', objectId: orgId, objectName: next.name, revision, details: { ...fieldChanges(org, next), policy: 'applied' } });
    }
    await w.tx.query(
      `INSERT INTO policy_documents (org_id, text, etag, revision) VALUES ($1, $2, $3, $4)
       ON CONFLICT (org_id) DO UPDATE SET text = EXCLUDED.text, etag = EXCLUDED.etag, revision = EXCLUDED.revision, updated_at = now()`,
      [orgId, text, etag, revision],
    );
    rememberTests(etag, document.tests ?? []);
    return { managed: true, applied: revision !== org.revision, dry_run: false, etag, revision, changes, tests };
  });
  // The objects' groups are the document's now: agents stopped reading them at the revision above.
  if (!dryRun) await retireGroupObjects(db, bus, orgId);
  return result;
}

/**
 * Hands the organization's access back to its objects (`DELETE .../policy`):
 * its policy groups become group objects with the same ids, then one write
 * drops the document. Agents enforce the same rules throughout. Done when
 * no document manages it.
 */
export async function releasePolicy(db: Database, bus: SignalBus, orgId: string): Promise<{ managed: false; revision: number }> {
  const org = await getObject<StoredOrganization>(db, orgId, 'organization', orgId);
  if (!org) throw notFound('organization');
  if (!org.policy) return { managed: false, revision: org.revision };
  await restoreGroupObjects(db, bus, orgId, org.policy.groups);
  return writeInOrg(db, bus, orgId, async (w) => {
    const locked = await w.lock<StoredOrganization>('organization', orgId);
    if (!locked.policy) return { managed: false as const, revision: locked.revision };
    const revision = await w.revision();
    const released: StoredOrganization = { ...locked, policy: null };
    await updateObject(w.tx, { ...released, revision, updated_at: new Date().toISOString() });
    await w.tx.query('DELETE FROM policy_documents WHERE org_id = $1', [orgId]);
    await recordAudit(w.tx, { orgId, action: 'update', kind: 'organization', objectId: orgId, objectName: locked.name, revision, details: { ...fieldChanges(locked, released), policy: 'released' } });
    return { managed: false as const, revision };
  });
}
