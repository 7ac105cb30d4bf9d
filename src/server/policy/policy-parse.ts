/**
 * A policy document's text → its value, or the first problem with where it
 * is (docs/protocol.md "Policy document"): YAML that doesn't parse, or a
 * value its schema refuses, named by its path and its line and column in
 * the text the user sent, so an editor or a CI log points at it.
 */
import { Ajv } from 'ajv';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { FORMATS, PolicyDocument } from '../../protocol/index.js';
import { withoutIds } from '../../util/without-ids.js';
import { readPlainYaml } from './fast-yaml.js';

/** Where a problem is: a JSON pointer into the document, and 1-based line and column (0 when it has no place, e.g. the whole text). */
export interface PolicyProblem {
  path: string;
  line: number;
  column: number;
  message: string;
}

/** A parsed document, and where each of its values stands in the text (a JSON pointer → line and column). */
export type ParsedPolicy =
  | { ok: true; document: PolicyDocument; locate: (path: string) => { line: number; column: number } }
  | { ok: false; problem: PolicyProblem };

// The `$id`s name schemas in the OpenAPI document; Ajv would take a repeated one (a rule in two places) for a conflict.
const validate = new Ajv({ allErrors: false, formats: { ...FORMATS } }).compile<PolicyDocument>(withoutIds(PolicyDocument) as object);

/** The text's place of `path` (the deepest node that exists on it), as line and column. */
function placeOf(doc: ReturnType<typeof parseDocument>, lines: LineCounter, path: readonly string[]): { line: number; column: number } {
  for (let n = path.length; n >= 0; n--) {
    const keys = path.slice(0, n).map((p) => (/^[0-9]+$/.test(p) ? Number(p) : p));
    const node = n === 0 ? doc.contents : doc.getIn(keys, true);
    if (isNode(node) && node.range) {
      const { line, col } = lines.linePos(node.range[0]);
      return { line, column: col };
    }
  }
  return { line: 0, column: 0 };
}

function segments(path: string): string[] {
  return path === '/' || path === '' ? [] : path.split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function pointer(path: readonly string[]): string {
  return path.length === 0 ? '/' : `/${path.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

function parseWithPlaces(text: string): { doc: ReturnType<typeof parseDocument>; lines: LineCounter } {
  const lines = new LineCounter();
  return { doc: parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true }), lines };
}

/** Parses and checks `text`. An empty text is an empty document (everything it may hold left out). */
export function parsePolicy(text: string): ParsedPolicy {
  const plain = readPlainYaml(text);
  if (plain !== undefined) {
    const value = plain.value ?? {};
    if (validate(value)) {
      // Places are wanted only when a later check refuses the document: read them then.
      let placed: ReturnType<typeof parseWithPlaces> | undefined;
      return {
        ok: true,
        document: value,
        locate: (path) => {
          placed ??= parseWithPlaces(text);
          return placeOf(placed.doc, placed.lines, segments(path));
        },
      };
    }
  }
  // A document the quick reading refused, or didn't read: read again for the problem's place.
  const { doc, lines } = parseWithPlaces(text);
  const [syntax] = doc.errors;
  if (syntax) {
    const at = lines.linePos(syntax.pos[0]);
    return { ok: false, problem: { path: '/', line: at.line, column: at.col, message: `not YAML: ${syntax.message.split('\n')[0] ?? syntax.code}` } };
  }
  const value: unknown = doc.toJS({ maxAliasCount: 100 }) ?? {};
  if (validate(value)) return { ok: true, document: value, locate: (path) => placeOf(doc, lines, segments(path)) };
  const error = validate.errors?.[0];
  const path = (error?.instancePath ?? '').split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  // An unknown member is refused where it stands, not at the object holding it.
  const extra = error?.keyword === 'additionalProperties' ? String((error.params as { additionalProperty?: unknown }).additionalProperty) : undefined;
  const at = extra === undefined ? path : [...path, extra];
  const what = extra === undefined ? (error?.message ?? 'is not allowed here') : 'is not a member this object may have';
  return { ok: false, problem: { path: pointer(at), ...placeOf(doc, lines, at), message: `${pointer(at)} ${what}` } };
}
