import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { FILESYSTEM_STORE_MARKER, FilesystemClaimCheckStore } from './filesystem-claim-check.store';
import { fileReadFailure } from './filesystem-read-failure';

const MIB = 1024 * 1024;

let root: string;
let store: FilesystemClaimCheckStore;
let count = 0;

/** A body name as the store writes them, unique in this spec. */
function name(): string {
  count += 1;
  return `1893456000-01890000-0000-7000-8000-${String(count).padStart(12, '0')}`;
}

/** The largest growth of the process's buffers while `work` runs, sampled every millisecond. */
async function peakBufferGrowth(work: () => Promise<unknown>): Promise<number> {
  const before = process.memoryUsage().arrayBuffers;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
  }, 1);
  try {
    await work().catch(() => undefined);
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, process.memoryUsage().arrayBuffers) - before;
}

async function refusal(promise: Promise<unknown>): Promise<InvalidMessageError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(InvalidMessageError);
  return error as InvalidMessageError;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rm-fs-store-'));
  await mkdir(join(root, 'store'));
  await writeFile(join(root, 'store', FILESYSTEM_STORE_MARKER), '');
  store = new FilesystemClaimCheckStore(join(root, 'store'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('FilesystemClaimCheckStore.get', () => {
  it('reads a body of the declared size', async () => {
    const location = name();
    await writeFile(join(root, 'store', location), 'twelve bytes');
    expect((await store.get(location, 12))?.toString()).toBe('twelve bytes');
    expect((await store.get(location))?.toString()).toBe('twelve bytes');
  });

  it('refuses a 200 MiB file declared as 10 bytes as claim-check-corrupt, without reading it', async () => {
    const location = name();
    const file = await open(join(root, 'store', location), 'w');
    await file.truncate(200 * MIB);
    await file.close();

    let error: InvalidMessageError | undefined;
    const growth = await peakBufferGrowth(async () => {
      error = await refusal(store.get(location, 10));
    });

    expect(error?.reason).toBe('claim-check-corrupt');
    expect(error?.message).toMatch(/holds 209715200 bytes where the message declares 10/);
    expect(growth).toBeLessThan(8 * MIB);
  });

  it('refuses a symbolic link to a file outside the store as claim-check-unreadable, never following it', async () => {
    const outside = join(root, 'outside.json');
    await writeFile(outside, '{"secret":1}');
    const location = name();
    await symlink(outside, join(root, 'store', location));

    const error = await refusal(store.get(location, 12));

    expect(error.reason).toBe('claim-check-unreadable');
    expect(error.message).toMatch(/ELOOP/);
  });

  it('refuses a directory in place of a body as claim-check-unreadable, not as an outage', async () => {
    const location = name();
    await mkdir(join(root, 'store', location));

    const error = await refusal(store.get(location, 10));

    expect(error.reason).toBe('claim-check-unreadable');
    expect(error.message).toMatch(/a directory/);
  });

  it('refuses a FIFO in place of a body at once, without waiting for a writer', async () => {
    const location = name();
    execFileSync('mkfifo', [join(root, 'store', location)]);

    const error = await refusal(store.get(location, 10));

    expect(error.reason).toBe('claim-check-unreadable');
    expect(error.message).toMatch(/not a regular file/);
  });

  it('answers undefined for a missing body, and an outage when the marker is gone', async () => {
    expect(await store.get(name(), 10)).toBeUndefined();
    const unmounted = new FilesystemClaimCheckStore(join(root, 'unmounted'));
    await mkdir(join(root, 'unmounted'));
    await mkdir(join(root, 'unmounted', name()));
    await expect(unmounted.get(name(), 10)).rejects.toThrow(ClaimCheckStoreUnavailableError);
  });

  it('counts a refused entry as an outage where the marker is missing: the directory may not be the store', async () => {
    const unmounted = new FilesystemClaimCheckStore(join(root, 'unmarked'));
    await mkdir(join(root, 'unmarked'));
    const location = name();
    await mkdir(join(root, 'unmarked', location));
    await expect(unmounted.get(location, 10)).rejects.toThrow(ClaimCheckStoreUnavailableError);
  });
});

describe('fileReadFailure', () => {
  it.each([
    ['ENOENT', 'missing'],
    ['ELOOP', 'refused'],
    ['EISDIR', 'refused'],
    ['ENOTDIR', 'refused'],
    ['EACCES', 'refused'],
    ['EPERM', 'refused'],
    ['ENXIO', 'refused'],
    ['EIO', 'outage'],
    ['ESTALE', 'outage'],
    ['EMFILE', 'outage'],
    ['ENFILE', 'outage'],
    ['ETIMEDOUT', 'outage'],
    ['ESOMETHINGNEW', 'outage'],
    [undefined, 'outage'],
  ])('classifies %s as %s', (code, expected) => {
    expect(fileReadFailure(Object.assign(new Error('failed'), { code }))).toBe(expected);
  });
});
