import ts from 'typescript';
import { dirname, join, normalize, relative, sep } from 'node:path';

/** One import of one file: `from` and `to` are paths relative to the repository, with `/`. */
export interface ImportEdge {
  from: string;
  to: string;
  line: number;
}

/**
 * Every module specifier a TypeScript file names, with its line: static
 * `import` (with or without `type`), `export … from`, `import x = require()`,
 * dynamic `import()`, and `import('…')` in a type position. Comments and
 * strings that are not specifiers are not specifiers.
 */
export function moduleSpecifiers(fileName: string, text: string): { specifier: string; line: number }[] {
  const kind = fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const found: { specifier: string; line: number }[] = [];
  const add = (node: ts.Node | undefined): void => {
    if (node !== undefined && ts.isStringLiteralLike(node)) {
      found.push({ specifier: node.text, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The imports of `file` (absolute) that stay inside the repository at
 * `root`: relative specifiers, resolved to the file they name (`.js` is
 * the compiled name of a `.ts` or `.tsx` source). Packages and `node:`
 * modules are not edges of the tree.
 */
export function relativeImports(root: string, file: string, text: string): ImportEdge[] {
  const from = toRepoPath(root, file);
  return moduleSpecifiers(file, text)
    .filter((s) => s.specifier.startsWith('./') || s.specifier.startsWith('../'))
    .map((s) => ({ from, to: toRepoPath(root, normalize(join(dirname(file), s.specifier))).replace(/\.js$/, '.ts'), line: s.line }));
}

function toRepoPath(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}

/** A circle of folders, and for each step one import that makes it. */
export interface FolderCycle {
  /** The folders, the first repeated at the end: `['store', 'audit', 'store']`. */
  folders: string[];
  /** One import per step, in order. */
  edges: ImportEdge[];
}

/**
 * The circles between folders, one for each group of folders that reach one
 * another (a strongly connected component of more than one folder): its
 * shortest circle through the group's first folder by name, and the group's
 * members. Imports within one folder are not looked at. Returns [] when the
 * folders form a directed acyclic graph.
 */
export function folderCycles(edges: readonly ImportEdge[], folderOf: (path: string) => string): { members: string[]; cycle: FolderCycle }[] {
  const witness = new Map<string, ImportEdge>();
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a === b) continue;
    const key = `${a}\0${b}`;
    if (!witness.has(key)) witness.set(key, e);
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)?.add(b);
  }
  const out: { members: string[]; cycle: FolderCycle }[] = [];
  for (const members of stronglyConnected(next)) {
    if (members.length < 2) continue;
    members.sort();
    const inGroup = new Set(members);
    const start = members[0] as string;
    const path = shortestReturn(start, (n) => [...(next.get(n) ?? [])].filter((m) => inGroup.has(m)).sort());
    const stepEdges = path.slice(1).map((to, i) => witness.get(`${path[i] as string}\0${to}`) as ImportEdge);
    out.push({ members, cycle: { folders: path, edges: stepEdges } });
  }
  return out;
}

/** Tarjan's algorithm, iterative enough for a few dozen folders: recursion depth is the folder count. */
function stronglyConnected(next: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const nodes = new Set<string>([...next.keys(), ...[...next.values()].flatMap((s) => [...s])]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      groups.push(group);
    }
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) connect(v);
  return groups;
}

/** Breadth-first: the shortest path from `start` back to itself. */
function shortestReturn(start: string, next: (n: string) => string[]): string[] {
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const n = queue.shift() as string;
    for (const m of next(n)) {
      if (m === start) {
        const between: string[] = [];
        for (let at: string | undefined = n; at !== undefined && at !== start; at = parent.get(at)) between.unshift(at);
        return [start, ...between, start];
      }
      if (!parent.has(m)) {
        parent.set(m, n);
        queue.push(m);
      }
    }
  }
  return [start];
}
