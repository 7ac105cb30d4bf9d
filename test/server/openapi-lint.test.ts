import { spawnSync } from 'node:child_process';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import { useServer } from './fixtures.js';
import { bin, fetchDocument, scratchDir, type OpenApiDocument } from './support/openapi-document.js';

interface LintResult {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
}

/** `redocly lint` with the recommended rules on a document; its JSON report. */
function redoclyLint(dir: string, path: string): LintResult {
  const config = `${dir}/redocly.yaml`;
  const res = spawnSync(bin('redocly'), ['lint', path, `--config=${config}`, '--format=json'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    // No telemetry or update check: the tests run offline.
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  if (res.error) throw res.error;
  const start = res.stdout.indexOf('{');
  if (start < 0) throw new Error(`redocly printed no report (exit ${res.status}):\n${res.stdout}\n${res.stderr}`);
  return JSON.parse(res.stdout.slice(start)) as LintResult;
}

const summary = (r: LintResult): string[] => r.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);

describe('GET /api/openapi.json passes the standard linters', () => {
  const h = useServer('pglite');
  const scratch = scratchDir();
  let doc: OpenApiDocument;
  beforeAll(async () => {
    doc = await fetchDocument(h());
    scratch.write('redocly.yaml', 'extends:\n  - recommended\n');
    // The browser login's two steps answer only redirects (302 to the issuer, 303 back to the page): no 2xx by design.
    scratch.write(
      '.redocly.lint-ignore.yaml',
      ['openapi.json:', '  operation-2xx-response:', ...[paths.authOidcLogin(), paths.authOidcCallback()].map((p) => `    - '#/paths/${p.replace(/\//g, '~1')}/get/responses'`), ''].join('\n'),
    );
  });
  afterAll(() => scratch.remove());

  it('redocly lint (recommended rules): no errors, no warnings', () => {
    const report = redoclyLint(scratch.dir, scratch.write('openapi.json', JSON.stringify(doc)));
    expect(summary(report)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('swagger-parser validate: a valid OpenAPI 3.1 document whose references all resolve', async () => {
    await expect(SwaggerParser.validate(scratch.write('validate.json', JSON.stringify(doc)))).resolves.toBeDefined();
  });

  // The linters themselves: a document missing what the rules ask for must be reported, or the tests above prove nothing.
  it('both report a broken document', async () => {
    const broken = structuredClone(doc);
    delete broken.servers;
    delete broken.info.license;
    const firstPath = Object.values(broken.paths)[0];
    const first = firstPath ? Object.values(firstPath)[0] : undefined;
    if (first) delete first.operationId;
    const rules = redoclyLint(scratch.dir, scratch.write('broken.json', JSON.stringify(broken))).problems.map((p) => p.ruleId);
    expect(rules).toEqual(expect.arrayContaining(['no-empty-servers', 'info-license', 'operation-operationId']));

    const dangling = structuredClone(doc);
    dangling.components.schemas = {};
    await expect(SwaggerParser.validate(scratch.write('dangling.json', JSON.stringify(dangling)))).rejects.toThrow();
  });
});
