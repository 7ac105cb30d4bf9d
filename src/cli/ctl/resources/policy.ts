import type { PolicyApplyResult } from '../../../client/index.js';
import { EXIT } from '../../exit-codes.js';
import type { CommandGroup, FlagUse, RemoteCommand } from '../command-spec.js';
import { orgLabel, type CtlContext } from '../context.js';
import { noExtraArgs } from '../flag-values.js';
import { changeLine, changeWithValues, failureLine, locatedError, readDocument, testFailures, type DocumentInput } from './policy-document.js';

const FILE: FlagUse = { name: 'file', help: 'the policy document (YAML) to send; - reads stdin' };

/** Sends the document (dry run or not); a `policy_invalid` error names the file's line and column. */
async function put(ctx: CtlContext, doc: DocumentInput, opts: { dryRun: boolean; ifMatch?: string | undefined }): Promise<PolicyApplyResult> {
  const org = await ctx.org();
  try {
    return await ctx.client.policy.apply(org.id, doc.text, { dryRun: opts.dryRun, ifMatch: opts.ifMatch, signal: ctx.signal });
  } catch (err) {
    // The error line says how many fail and the first; each is worth its own line.
    for (const f of testFailures(err) ?? []) ctx.stderr.write(`${failureLine(f)}\n`);
    throw locatedError(err, doc.name);
  }
}

function testsLine(result: PolicyApplyResult): string {
  return `tests: ${result.tests.passed} passed`;
}

const getCommand: RemoteCommand = {
  kind: 'remote',
  name: 'get',
  summary: "print the organization's policy document, exactly as applied (or generated from its objects while none manages it)",
  details: [
    'Prints the text as the server keeps it: comments and key order as last applied. While no document',
    "manages the organization, the text is generated from its objects (adopt applies it). -o json|yaml:",
    '{managed, etag, text}; the etag is what apply --if-match takes.',
  ].join('\n'),
  flags: ['org', 'output'],
  examples: ['fleetplane ctl policy get --org acme > policy.yaml', 'fleetplane ctl policy get --org acme -o json | jq -r .etag'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const policy = await ctx.client.policy.get((await ctx.org()).id, { signal: ctx.signal });
    if (ctx.out.forPeople) ctx.out.writer.write(policy.text);
    else ctx.out.document({ managed: policy.managed, etag: policy.etag, text: policy.text });
  },
};

const applyCommand: RemoteCommand = {
  kind: 'remote',
  name: 'apply',
  summary: 'apply a policy document as one revision, after its tests pass',
  details: [
    'Sends the document (-f FILE, or - for stdin). The server checks it, runs its tests, and applies it as one',
    'revision; from then on the document owns the security groups, tag owners and network settings (REST',
    'writes to them are refused until `policy release`). Prints each change (+ added, - removed, ~ changed),',
    'the tests passed and the revision. A document that does not parse or validate is reported as',
    'FILE:LINE:COLUMN; a failing test by its index (from 0), its ports and why; nothing is changed (exit 1).',
    '--dry-run checks and prints what would change. --if-match ETAG (from policy get -o json) applies only',
    'over that document (else exit 1, precondition_failed).',
  ].join('\n'),
  flags: ['org', FILE, 'dry-run', { name: 'if-match', value: 'ETAG', help: "apply only if the server's document still has this ETag (policy get -o json)" }, 'output'],
  examples: [
    'fleetplane ctl policy apply -f policy.yaml --org acme',
    'fleetplane ctl policy apply -f policy.yaml --org acme --dry-run',
    'generate-policy | fleetplane ctl policy apply -f - --org acme',
  ],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const doc = await readDocument(ctx);
    const dryRun = ctx.flags.boolean('dry-run') === true;
    const result = await put(ctx, doc, { dryRun, ifMatch: ctx.flags.string('if-match') });
    if (!ctx.out.forPeople) return ctx.out.document(result);
    for (const change of result.changes) ctx.out.line(changeLine(change));
    ctx.out.line(testsLine(result));
    const org = orgLabel(await ctx.org());
    if (result.dry_run) ctx.out.line(`dry run: nothing changed; organization ${org} is at revision ${result.revision}`);
    else if (result.applied) ctx.out.line(`applied: organization ${org} is at revision ${result.revision}`);
    else ctx.out.line(`no change in effect; organization ${org} is at revision ${result.revision} (the document's text is kept)`);
  },
};

const diffCommand: RemoteCommand = {
  kind: 'remote',
  name: 'diff',
  summary: 'print what applying a policy document would change (exit 1 when it would change something)',
  details: [
    'A dry run of apply: prints each change (+ added, - removed, ~ changed) with its old (-) and new (+)',
    'value as JSON. Exit codes, as kubectl diff and diff(1): 0 nothing would change, 1 something would',
    '(or the document is invalid, its tests fail, the server failed), 2 usage error.',
  ].join('\n'),
  flags: ['org', FILE, 'output'],
  examples: ['fleetplane ctl policy diff -f policy.yaml --org acme', 'fleetplane ctl policy diff -f policy.yaml --org acme -o json | jq .changes'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const result = await put(ctx, await readDocument(ctx), { dryRun: true });
    if (ctx.out.forPeople) for (const change of result.changes) for (const line of changeWithValues(change)) ctx.out.line(line);
    else ctx.out.document(result);
    return result.changes.length === 0 ? EXIT.ok : EXIT.failure;
  },
};

const testCommand: RemoteCommand = {
  kind: 'remote',
  name: 'test',
  summary: "run a policy document's tests without applying it (exit 1 when one fails)",
  details: [
    'A dry run of apply: checks the document and runs its tests. Prints "N tests passed", or each failing',
    'test (its index from 0, from -> to port, what it expected, why not) and exits 1. -o json|yaml:',
    '{ok: true, total, passed, failures: []}, or {ok: false, failures} (each {index, test, reason}).',
  ].join('\n'),
  flags: ['org', FILE, 'output'],
  examples: ['fleetplane ctl policy test -f policy.yaml --org acme'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const doc = await readDocument(ctx);
    const org = (await ctx.org()).id;
    let result: PolicyApplyResult;
    try {
      result = await ctx.client.policy.apply(org, doc.text, { dryRun: true, signal: ctx.signal });
    } catch (err) {
      const failures = testFailures(err);
      if (failures === undefined) throw locatedError(err, doc.name);
      if (!ctx.out.forPeople) ctx.out.document({ ok: false, failures });
      else {
        for (const f of failures) ctx.out.line(`FAIL ${failureLine(f)}`);
        ctx.out.line(`${failures.length} ${failures.length === 1 ? 'test' : 'tests'} failed`);
      }
      return EXIT.failure;
    }
    if (!ctx.out.forPeople) return ctx.out.document({ ok: true, total: result.tests.total, passed: result.tests.passed, failures: [] });
    ctx.out.line(`${result.tests.passed} ${result.tests.passed === 1 ? 'test' : 'tests'} passed`);
  },
};

const adoptCommand: RemoteCommand = {
  kind: 'remote',
  name: 'adopt',
  summary: 'move an organization from objects to a policy document generated from them, changing nothing in effect',
  details: [
    'Reads the document the server generates from the organization\'s security groups, tag owners and',
    'network settings, and applies it as is (If-Match: only if nothing changed in between). The rules stay',
    'the same; from then on the document owns them. Start editing with policy get > policy.yaml.',
    'An organization a document already manages is left as it is.',
  ].join('\n'),
  flags: ['org', 'output'],
  examples: ['fleetplane ctl policy adopt --org acme'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const org = await ctx.org();
    const label = orgLabel(org);
    const current = await ctx.client.policy.get(org.id, { signal: ctx.signal });
    if (current.managed) {
      if (!ctx.out.forPeople) return ctx.out.document({ managed: true, adopted: false, etag: current.etag });
      ctx.out.line(`organization ${label} is already managed by a policy document: nothing to adopt`);
      ctx.out.line(`edit it: fleetplane ctl policy get --org ${label} > policy.yaml`);
      return;
    }
    const result = await put(ctx, { name: 'generated policy', text: current.text }, { dryRun: false, ifMatch: current.etag });
    if (!ctx.out.forPeople) return ctx.out.document({ ...result, adopted: true });
    ctx.out.line(`organization ${label} is managed by its policy document now, at revision ${result.revision}`);
    ctx.out.line(`to start editing: fleetplane ctl policy get --org ${label} > policy.yaml, then fleetplane ctl policy apply -f policy.yaml --org ${label}`);
  },
};

const releaseCommand: RemoteCommand = {
  kind: 'remote',
  name: 'release',
  summary: 'hand the organization back to its objects: the same rules, editable again',
  details: [
    'The document\'s groups become security group objects (same ids and rules), and tag owners and network',
    'settings are editable through their REST routes again; agents enforce the same rules throughout.',
    'Releasing an organization no document manages does nothing.',
  ].join('\n'),
  flags: ['org', 'output'],
  examples: ['fleetplane ctl policy release --org acme'],
  async run(ctx, args) {
    noExtraArgs(args, 0);
    const org = await ctx.org();
    const result = await ctx.client.policy.release(org.id, { signal: ctx.signal });
    ctx.out.done(
      `organization ${orgLabel(org)} is not managed by a policy document (revision ${result.revision}): its security groups, tag owners and network settings are editable again`,
      result,
    );
  },
};

export const policyGroup: CommandGroup = {
  name: 'policy',
  aliases: ['policies'],
  summary: "an organization's policy document: its security groups, tag owners, network settings and tests as one YAML file",
  commands: [getCommand, applyCommand, diffCommand, testCommand, adoptCommand, releaseCommand],
};
