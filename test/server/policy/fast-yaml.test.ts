/**
 * The quick reading of a policy document (js-yaml) gives exactly the value
 * `yaml` gives, or leaves the text to `yaml`: never a different document.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument, stringify } from 'yaml';
import { readPlainYaml } from '../../../src/server/policy/fast-yaml.js';
import { parsePolicy } from '../../../src/server/policy/policy-parse.js';
import { policyDocument } from '../../../src/bench/measure/policy-document.js';

const slow = (text: string): unknown => parseDocument(text, { uniqueKeys: true }).toJS({ maxAliasCount: 100 }) ?? null;

/** Plain scalars whose meaning differs between YAML schemas and libraries. */
const SCALARS = [
  '', '~', 'null', 'Null', 'NULL', 'nULL', 'true', 'True', 'TRUE', 'tRUE', 'false', 'False', 'FALSE', 'yes', 'no', 'on', 'off', 'y', 'n',
  '0', '-0', '+12', '012', '0o17', '0o18', '0O17', '0x1F', '0x1f', '0X1F', '-0x1F', '+0x1F', '0b1010', '-0b1', '1_000', '1,000', '0.', '.5',
  '-.5', '1e3', '1E3', '1e+3', '1.5e-3', '+1.5', '1.2.3', '.inf', '-.inf', '+.Inf', '.INF', '.nan', '.NaN', '.NAN', '-.nan', 'inf', 'nan',
  '12:30', '1:20:30', '2001-12-14', '2001-12-14t21:59:43.10-05:00', '10.0.0.0/8', 'tcp:5432', '8000-8080', '9007199254740993', '-',
];

describe('the quick reading of policy documents', () => {
  it('reads every plain scalar as yaml does (YAML 1.2 core), or leaves it to yaml', () => {
    const texts = SCALARS.flatMap((s) => [`k: ${s}\n`, `- ${s}\n`, `{k: [${s}]}\n`]);
    const read = texts.filter((text) => readPlainYaml(text) !== undefined);
    expect(read.length).toBeGreaterThan(texts.length * 0.9);
    for (const text of read) expect(readPlainYaml(text)?.value, text).toStrictEqual(slow(text));
  });

  it('agrees with yaml on every value yaml writes, in block and flow style', () => {
    const scalar = fc.oneof(fc.constantFrom(...SCALARS), fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('node'), { maxKeys: 4 })),
    })).node;
    let runs = 0;
    let quickly = 0;
    fc.assert(
      fc.property(value, fc.constantFrom('block', 'flow') as fc.Arbitrary<'block' | 'flow'>, (v, style) => {
        const text = stringify(v, { collectionStyle: style });
        const quick = readPlainYaml(text);
        runs++;
        if (quick === undefined) return;
        quickly++;
        expect(quick.value).toStrictEqual(slow(text));
      }),
      { numRuns: 300 },
    );
    // Agreeing by leaving everything to yaml would be no reading at all.
    expect(quickly).toBeGreaterThan(runs / 2);
  });

  it('leaves to yaml what it is not sure of: anchors and aliases, tags, directives, duplicate keys, more than one document', () => {
    const texts = ['a: &x [1]\nb: *x\n', 'a: !!str 12\n', '%YAML 1.1\n---\na: yes\n', 'a: 1\na: 2\n', 'a: 1\n---\nb: 2\n', 'a: [1\n'];
    expect(texts.filter((t) => readPlainYaml(t) !== undefined)).toEqual([]);
  });

  it("reads the bench's document as yaml does, and parsePolicy still places the problems it finds", () => {
    const text = policyDocument(3);
    expect(readPlainYaml(text)?.value).toStrictEqual(slow(text));
    const parsed = parsePolicy(text);
    if (!parsed.ok) throw new Error(parsed.problem.message);
    // The quick reading has no places: they are read when asked for.
    const line = text.split('\n').findIndex((l) => l.startsWith('security_groups:')) + 1;
    expect(parsed.locate('/security_groups')).toEqual({ line: line + 1, column: 3 });
    const refused = parsePolicy(`${text}\nnot_a_member: 1\n`);
    expect(refused.ok ? undefined : refused.problem).toMatchObject({ path: '/not_a_member', line: text.split('\n').length + 1, column: 15 });
  });
});
