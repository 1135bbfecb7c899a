// `npm run pack`: builds the packages, then writes their tarballs to dist/packages/ (npm pack).
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { buildPackages } from './build-packages.mjs';

const root = resolve(import.meta.dirname, '..');
export const PACK_DESTINATION = join(root, 'dist', 'packages');

/** Builds and packs every package that has sources; returns the tarballs' absolute paths by package name. */
export function packPackages() {
  const built = buildPackages();
  rmSync(PACK_DESTINATION, { recursive: true, force: true });
  mkdirSync(PACK_DESTINATION, { recursive: true });
  const tarballs = {};
  for (const dir of built) {
    const output = execFileSync(
      'npm',
      ['pack', join(root, dir), '--pack-destination', PACK_DESTINATION, '--json', '--silent'],
      { cwd: root, encoding: 'utf8' },
    );
    const [packed] = JSON.parse(output);
    tarballs[packed.name] = join(PACK_DESTINATION, packed.filename);
    console.log(
      `pack: ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} KiB packed, ` +
        `${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked`,
    );
  }
  return tarballs;
}

if (import.meta.url === `file://${process.argv[1]}`) packPackages();
