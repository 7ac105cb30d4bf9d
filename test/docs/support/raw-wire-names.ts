import ts from 'typescript';
import { EVENT_TYPES } from '../../../src/protocol/index.js';

/** A protocol string spelled outside `src/protocol/`. */
export interface RawWireName {
  file: string;
  line: number;
  /** The literal's text as written (a template's part, a regex's source). */
  text: string;
  rule: string;
}

/**
 * One kind of raw protocol string. `isStart`: the text begins the literal
 * (a whole string, or a template's head); Redis keys are only looked for
 * there, while a path also begins any template part that follows a
 * substitution (`${base}/api/...`).
 */
interface Rule {
  name: string;
  /** Checked against string literals and each part of a template literal. */
  literal?: (text: string, isStart: boolean) => boolean;
  /** Checked against the source of regex literals. */
  regex?: (source: string) => boolean;
}

const HEADER_NAMES = ['x-fleetplane-revision', 'if-none-match', 'if-match', 'retry-after', 'etag'];
/** Case-sensitive in literals, where prose says "bearer token"; any case in regexes, which match the header. */
const BEARER_WORD = /\bBearer\b/;
const BEARER_ANY_CASE = /\bbearer\b/i;
const EVENT_TYPE_MEMBER = new RegExp(`"type"\\s*:\\s*"(?:${EVENT_TYPES.join('|')})"`);

const RULES: readonly Rule[] = [
  { name: 'API path', literal: (t) => t.startsWith('/api/') || t.startsWith('/private/') },
  {
    name: 'header name',
    literal: (t) => HEADER_NAMES.includes(t.toLowerCase()) || t.toLowerCase().includes('x-fleetplane-revision'),
  },
  { name: 'watch media type', literal: (t) => t.includes('application/json;stream=watch') },
  {
    name: 'Bearer scheme',
    literal: (t) => BEARER_WORD.test(t) || t.trim().toLowerCase() === 'bearer',
    regex: (s) => BEARER_ANY_CASE.test(s),
  },
  { name: 'watch event type', literal: (t) => EVENT_TYPE_MEMBER.test(t) },
  { name: 'NOTIFY channel', literal: (t) => t.includes('fleetplane_signals'), regex: (s) => s.includes('fleetplane_signals') },
  // A blank after the colon is prose ("fleetplane: unknown command"), never a key.
  { name: 'Redis key or channel', literal: (t, isStart) => isStart && /^fleetplane:\S/.test(t) },
];

/**
 * Walks the string, template and regex literals of one TypeScript source
 * (comments are trivia, never visited) and returns every protocol string in
 * them.
 */
export function findRawWireNames(file: string, source: string): RawWireName[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: RawWireName[] = [];
  const report = (node: ts.Node, text: string, rule: Rule): void => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    found.push({ file, line, text, rule: rule.name });
  };
  const checkLiteral = (node: ts.Node, text: string, isStart: boolean): void => {
    for (const rule of RULES) if (rule.literal?.(text, isStart)) report(node, text, rule);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      // An import specifier is a module path, not a wire name.
      if (!ts.isImportDeclaration(node.parent) && !ts.isExportDeclaration(node.parent)) checkLiteral(node, node.text, true);
    } else if (ts.isTemplateHead(node)) {
      checkLiteral(node, node.text, true);
    } else if (ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      checkLiteral(node, node.text, false);
    } else if (ts.isRegularExpressionLiteral(node)) {
      const source = node.text.slice(1, node.text.lastIndexOf('/'));
      for (const rule of RULES) if (rule.regex?.(source)) report(node, node.text, rule);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}
