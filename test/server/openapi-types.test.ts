import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServer } from './fixtures.js';
import { ROOT, bin, fetchDocument, scratchDir } from './support/openapi-document.js';

/** A user's program: it imports the generated named types and uses them as the API's data. */
const PROGRAM = `
import type { components, operations, paths } from './api.js';

type Device = components['schemas']['Device'];
type ErrorCode = components['schemas']['ErrorCode'];
type WatchEvent = components['schemas']['WatchEvent'];

export function appliedHead(device: Device, head: number): boolean {
  return device.status.applied_revision === head && device.status.apply_error === null;
}

export const code: ErrorCode = 'revision_compacted';
// @ts-expect-error: the error code is the catalog's enum, not any string
export const notACode: ErrorCode = 'no_such_code';

export function revisionOf(line: WatchEvent): number | undefined {
  switch (line.type) {
    case 'tail':
    case 'bookmark':
      return line.value.revision;
    case 'change':
    case 'delete':
      return line.value.revision;
    default:
      return undefined;
  }
}

type Listed = operations['listDevices']['responses'][200]['content']['application/json'];
export const firstPage = (page: Listed): string | undefined => page.next;
export type CreateDevice = paths['/api/organizations/{org}/devices']['post'];
`;

function run(cmd: string, args: string[], cwd: string): { status: number | null; output: string } {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (res.error) throw res.error;
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

describe('openapi-typescript turns the document into named types a program can use', () => {
  const h = useServer('pglite');
  const scratch = scratchDir();
  beforeAll(async () => {
    scratch.write('openapi.json', JSON.stringify(await fetchDocument(h())));
  });
  afterAll(() => scratch.remove());

  it('generates components and operations that type-check in a strict program', () => {
    const gen = run(bin('openapi-typescript'), ['openapi.json', '--output', 'api.ts'], scratch.dir);
    expect(gen.status, gen.output).toBe(0);
    scratch.write('program.ts', PROGRAM);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    scratch.write(
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: [] },
        files: ['program.ts'],
      }),
    );
    const check = run(process.execPath, [tsc, '-p', scratch.dir], scratch.dir);
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
  });
});
