import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { restoreLibraryLinks } from '../../src/server/db/embedded/postgres-binaries.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the embedded PostgreSQL package installed without its install script', () => {
  it('gets the shared-library symlinks it lists recreated, and keeps the ones that exist', () => {
    const pkg = mkdtempSync(join(tmpdir(), 'fp-pgpkg-'));
    dirs.push(pkg);
    mkdirSync(join(pkg, 'native', 'lib'), { recursive: true });
    writeFileSync(join(pkg, 'native', 'lib', 'libpq.so.5.17'), 'library');
    writeFileSync(join(pkg, 'native', 'lib', 'libz.so.1.3'), 'library');
    writeFileSync(join(pkg, 'native', 'lib', 'libz.so.1'), 'a copy the installer made');
    writeFileSync(
      join(pkg, 'native', 'pg-symlinks.json'),
      JSON.stringify([
        { source: 'native/lib/libpq.so.5.17', target: 'native/lib/libpq.so.5' },
        { source: 'native/lib/libz.so.1.3', target: 'native/lib/libz.so.1' },
      ]),
    );
    restoreLibraryLinks(pkg);
    expect(lstatSync(join(pkg, 'native', 'lib', 'libpq.so.5')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(pkg, 'native', 'lib', 'libpq.so.5'))).toBe('libpq.so.5.17');
    expect(lstatSync(join(pkg, 'native', 'lib', 'libz.so.1')).isSymbolicLink()).toBe(false);
    // Idempotent: a second start finds everything in place.
    restoreLibraryLinks(pkg);
  });
});
