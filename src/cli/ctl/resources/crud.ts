import { UsageError } from '../../exit-codes.js';
import type { Command, FlagUse } from '../command-spec.js';
import type { CtlContext } from '../context.js';
import { dataFlag, intFlag, noExtraArgs, requireArg } from '../flag-values.js';
import type { Column } from '../output.js';

export type Verb = 'list' | 'get' | 'create' | 'update' | 'delete';

/** How one versioned resource is listed, named, read and written; `crudCommands` makes its five verbs. */
export interface CrudSpec<T extends { id: string }> {
  /** Singular noun in messages: `device`. */
  noun: string;
  /** Placeholder of a reference in usage: `<device>`. */
  ref: string;
  /** What a reference may be, for --help: `its hostname, tunnel IP or id`. */
  refHelp: string;
  /** Needs `--org`. */
  scoped: boolean;
  columns: ReadonlyArray<Column<T>>;
  /** How `get` (and create, update) show the object to people: the fields after `id` and the name, in this order (describe.ts places the rest). */
  fieldOrder: readonly string[];
  /** What `list --help` says of the columns (what a header means where it could mislead). */
  listDetails?: string;
  /** Flags of `list` besides --org, --output and --watch (filters the spec's `list` reads). */
  listFlags?: readonly FlagUse[];
  /** Flags that set fields on create and update (besides --data). */
  fieldFlags: readonly FlagUse[];
  /** Flags that set fields on create only. */
  createFlags?: readonly FlagUse[];
  /** Said to people (on stderr) after the created object was printed, e.g. a secret shown once. */
  afterCreate?: (ctx: CtlContext, created: T) => void;
  /** The fields those flags set; undefined ones are left out. */
  fields(ctx: CtlContext, verb: 'create' | 'update'): Promise<Record<string, unknown>>;
  list(ctx: CtlContext): Promise<T[]>;
  /** The id a reference (name or id) stands for. */
  resolve(ctx: CtlContext, ref: string): Promise<string>;
  get(ctx: CtlContext, id: string): Promise<T>;
  /** How `get` shows the object to people (tables); default the fields in `fieldOrder`'s order. `-o json|yaml` always prints the object. */
  show?: (ctx: CtlContext, value: T) => Promise<void>;
  create(ctx: CtlContext, body: Record<string, unknown>): Promise<T>;
  update(ctx: CtlContext, id: string, body: Record<string, unknown>, ifMatch: number | undefined): Promise<T>;
  remove(ctx: CtlContext, id: string, ifMatch: number | undefined): Promise<void>;
  /** `list --watch`, when the kind has a watch stream. */
  watch?: (ctx: CtlContext) => Promise<void>;
  summaries: Record<Verb, string>;
  examples: Record<Verb, readonly string[]>;
  /** Extra --help text of create and update (e.g. a flag grammar). */
  writeDetails?: string;
}

async function body<T extends { id: string }>(ctx: CtlContext, spec: CrudSpec<T>, verb: 'create' | 'update'): Promise<Record<string, unknown>> {
  const input = { ...(await dataFlag(ctx.flags.string('data'))), ...(await spec.fields(ctx, verb)) };
  if (Object.keys(input).length === 0) throw new UsageError(`nothing to ${verb}: give --data or field flags`);
  return input;
}

/** What `get --help` says of the output for people. */
const GET_LAYOUT = [
  'Output: a field a line, like kubectl describe: id and the name first, then the fields in a fixed order,',
  'revision, created_by and the timestamps last; lists and nested objects as indented YAML. -o json and',
  '-o yaml print the object exactly as the server sent it.',
].join('\n');

/** `deleted device web-1 (<id>)`, or just the id when that is what was given. */
function named(ref: string, id: string): string {
  return ref === id ? id : `${ref} (${id})`;
}

/** list, get, create, update and delete of one resource. */
export function crudCommands<T extends { id: string }>(spec: CrudSpec<T>): Command[] {
  const org: readonly FlagUse[] = spec.scoped ? ['org'] : [];
  const refArg = `the ${spec.noun}: ${spec.refHelp}`;
  return [
    {
      kind: 'remote',
      name: 'list',
      summary: spec.summaries.list,
      ...(spec.listDetails === undefined ? {} : { details: spec.listDetails }),
      flags: [...org, 'output', ...(spec.watch ? (['watch'] as const) : []), ...(spec.listFlags ?? [])],
      examples: spec.examples.list,
      async run(ctx, args) {
        noExtraArgs(args, 0);
        if (spec.watch && ctx.flags.boolean('watch') === true) return spec.watch(ctx);
        ctx.out.list(await spec.list(ctx), spec.columns);
      },
    },
    {
      kind: 'remote',
      name: 'get',
      args: spec.ref,
      summary: spec.summaries.get,
      details: `${spec.ref}: ${refArg}.\n\n${GET_LAYOUT}`,
      flags: [...org, 'output'],
      examples: spec.examples.get,
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const id = await spec.resolve(ctx, requireArg(args[0], spec.ref));
        const value = await spec.get(ctx, id);
        if (spec.show !== undefined && ctx.out.forPeople) await spec.show(ctx, value);
        else ctx.out.object(value, spec.fieldOrder);
      },
    },
    {
      kind: 'remote',
      name: 'create',
      summary: spec.summaries.create,
      ...(spec.writeDetails === undefined ? {} : { details: spec.writeDetails }),
      flags: [...org, ...spec.fieldFlags, ...(spec.createFlags ?? []), 'data', 'output'],
      examples: spec.examples.create,
      async run(ctx, args) {
        noExtraArgs(args, 0);
        const created = await spec.create(ctx, await body(ctx, spec, 'create'));
        ctx.out.object(created, spec.fieldOrder);
        spec.afterCreate?.(ctx, created);
      },
    },
    {
      kind: 'remote',
      name: 'update',
      args: spec.ref,
      summary: spec.summaries.update,
      details: [`${spec.ref}: ${refArg}. Only the fields given change.`, spec.writeDetails].filter((d) => d !== undefined).join('\n\n'),
      flags: [...org, ...spec.fieldFlags, 'data', 'if-match', 'output'],
      examples: spec.examples.update,
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const ref = requireArg(args[0], spec.ref);
        const ifMatch = intFlag('if-match', ctx.flags.string('if-match'));
        const input = await body(ctx, spec, 'update');
        ctx.out.object(await spec.update(ctx, await spec.resolve(ctx, ref), input, ifMatch), spec.fieldOrder);
      },
    },
    {
      kind: 'remote',
      name: 'delete',
      args: spec.ref,
      summary: spec.summaries.delete,
      details: `${spec.ref}: ${refArg}.`,
      flags: [...org, 'if-match', 'output'],
      examples: spec.examples.delete,
      async run(ctx, args) {
        noExtraArgs(args, 1);
        const ref = requireArg(args[0], spec.ref);
        const ifMatch = intFlag('if-match', ctx.flags.string('if-match'));
        const id = await spec.resolve(ctx, ref);
        await spec.remove(ctx, id, ifMatch);
        ctx.out.done(`deleted ${spec.noun} ${named(ref, id)}`, { id, deleted: true });
      },
    },
  ];
}
