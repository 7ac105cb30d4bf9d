/**
 * A quick first reading of a policy document's text, for the documents
 * operators write: plain YAML 1.2 with the core schema, no anchors, aliases,
 * tags or directives. `yaml` (which places a problem at its line and column)
 * took 40 ms and allocated about 48 MB for a 53 KB document, two dozen young
 * generation collections on a worker holding thousands of connections;
 * js-yaml reads it in 3 ms. Anything this reader isn't sure of is left to
 * `yaml`, so both readings of a text agree.
 */
import jsyaml from 'js-yaml';

/** A plain scalar's type, with the very pattern and value the `yaml` package's core schema gives it. */
function scalar(tag: string, test: RegExp, value: (text: string) => unknown): jsyaml.Type {
  return new jsyaml.Type(`tag:yaml.org,2002:${tag}`, {
    kind: 'scalar',
    resolve: (data: unknown) => typeof data === 'string' && test.test(data),
    construct: (data: string) => value(data),
  });
}

/**
 * YAML 1.2's core schema as `yaml` resolves it (not js-yaml's own, which
 * also reads `0b1010`, `-0x1F` and `1_000` as numbers): null, booleans,
 * decimal, octal (0o) and hexadecimal (0x) integers, and floats.
 */
const CORE = jsyaml.FAILSAFE_SCHEMA.extend({
  implicit: [
    scalar('null', /^(?:~|[Nn]ull|NULL)?$/, () => null),
    scalar('bool', /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/, (s) => s[0] === 't' || s[0] === 'T'),
    scalar('int', /^(?:0o[0-7]+|[-+]?[0-9]+|0x[0-9a-fA-F]+)$/, (s) =>
      s.startsWith('0o') ? parseInt(s.slice(2), 8) : s.startsWith('0x') ? parseInt(s.slice(2), 16) : parseInt(s, 10),
    ),
    scalar(
      'float',
      /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+|[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*))$/,
      (s) => (s.slice(-3).toLowerCase() === 'nan' ? Number.NaN : /inf$/i.test(s) ? (s[0] === '-' ? -Infinity : Infinity) : parseFloat(s)),
    ),
  ],
});

// An anchor or alias (`yaml` bounds how far aliases expand; js-yaml shares them), an explicit tag, or a
// directive (`%YAML 1.1` changes what plain scalars mean). Seen anywhere, even inside a quoted string:
// such a text is only read the slow way.
const NOT_PLAIN = /[&*!]|^%/m;

/**
 * The document's value when the quick reading is sure of it; undefined
 * when the text must be read by `yaml` (it may hold anchors, aliases, tags
 * or directives, or it didn't parse here: `yaml` then names the problem).
 */
export function readPlainYaml(text: string): { value: unknown } | undefined {
  if (NOT_PLAIN.test(text)) return undefined;
  try {
    return { value: jsyaml.load(text, { schema: CORE, json: false }) };
  } catch {
    // Not an error of the document's: `yaml` reads it next, and says what is wrong with it, if anything.
    return undefined;
  }
}
