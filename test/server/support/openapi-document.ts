import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '../../../src/protocol/index.js';
import type { Harness } from '../fixtures.js';

/** The repository's root (node_modules/.bin holds the tools the OpenAPI tests run). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A tool installed by npm (a devDependency), never a global one. */
export function bin(name: string): string {
  return join(ROOT, 'node_modules', '.bin', name);
}

/** The part of the OpenAPI document the tests read. */
export interface OpenApiDocument {
  openapi: string;
  info: { license?: { name?: string; identifier?: string } };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

export interface Operation {
  operationId?: string;
  parameters?: { in: string; name: string }[];
  responses: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema: Schema }> }>;
}

export interface Schema {
  $ref?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  [key: string]: unknown;
}

/** GET /api/openapi.json of the harness's server. */
export async function fetchDocument(h: Harness): Promise<OpenApiDocument> {
  const res = await h.call('GET', ROUTES.openapi);
  if (res.statusCode !== 200) throw new Error(`GET ${ROUTES.openapi}: ${res.statusCode}`);
  return res.json() as OpenApiDocument;
}

/** A temporary directory for the tools' files, removed by `remove`. */
export function scratchDir(): { dir: string; write(name: string, text: string): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'fleetplane-openapi-'));
  return {
    dir,
    write(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
