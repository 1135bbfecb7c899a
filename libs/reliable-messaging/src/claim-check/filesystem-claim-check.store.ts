import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readdir, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { ConfigurationError } from '../errors/configuration.error';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { errorMessage } from '../util/error-text';
import { createdAtOfId, expiryOfName, objectName, OBJECT_NAME } from './claim-check-store';
import { fileReadFailure } from './filesystem-read-failure';
import { readDeclaredSize, sizeMismatch } from './stored-body-size';
import type {
  ClaimCheckBodyInfo,
  ClaimCheckStore,
  ClaimCheckStoreStats,
} from '../options/claim-check.options';

const SCHEME = 'file:';
/**
 * O_NOFOLLOW: a symbolic link at a body's name is refused (ELOOP), never followed to a file outside the store.
 * O_NONBLOCK: a FIFO at a body's name must not block the open until a writer comes; fstat then refuses it.
 */
const OPEN_BODY = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Bodies are read in chunks of this size into the one buffer of their declared size. */
const READ_CHUNK_BYTES = 1024 * 1024;
/** The file that says the directory is the store itself, not an empty mount point whose volume is missing. */
export const FILESYSTEM_STORE_MARKER = '.rm-claim-check';

/**
 * Bodies as files in one directory, for a volume every publisher and consumer mounts. A file is named after its
 * expiry and id (`<expiry epoch s>-<uuid>`), written under a temporary name and renamed, so a reader never sees
 * half a body. References look like `file:<name>`, never a path: the directory is this store's configuration.
 *
 * The directory must hold the marker file `.rm-claim-check`, created once with the volume (`touch`). Without it
 * the store counts as unavailable: an unmounted volume leaves an empty mount point, where a publisher would
 * write bodies no other pod sees and a consumer would take every body for missing and dead-letter it.
 */
export class FilesystemClaimCheckStore implements ClaimCheckStore {
  readonly kind = 'filesystem';

  constructor(private readonly directory: string) {
    if (typeof directory !== 'string' || !isAbsolute(directory)) {
      throw new ConfigurationError(
        `FilesystemClaimCheckStore: the directory must be an absolute path, got ${JSON.stringify(directory)}`,
      );
    }
  }

  referenceFor(info: ClaimCheckBodyInfo): string {
    return `${SCHEME}${objectName(info)}`;
  }

  locate(reference: string): string | undefined {
    if (!reference.startsWith(SCHEME)) return undefined;
    const name = reference.slice(SCHEME.length);
    return OBJECT_NAME.test(name) ? name : undefined;
  }

  async put(location: string, body: Buffer): Promise<void> {
    const temporary = join(this.directory, `.${location}.${randomBytes(4).toString('hex')}.tmp`);
    await this.requireMarker();
    await this.run(async () => {
      await writeFile(temporary, body, { flag: 'wx' });
      await rename(temporary, join(this.directory, location));
    });
  }

  /**
   * Opens the file without following a link and checks, on the open descriptor, that it is a regular file of the
   * declared size before reading a byte; then reads at most one byte more than that. Anything at the name that
   * the store never writes (a link, a directory, a FIFO, a file it may not read) is refused as
   * `claim-check-unreadable`, once the marker shows the directory is the store.
   */
  async get(location: string, expectedBytes?: number): Promise<Buffer | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(join(this.directory, location), OPEN_BODY);
    } catch (error) {
      return this.failedRead(location, error);
    }
    try {
      const file = await handle.stat();
      if (!file.isFile()) {
        await this.requireMarker();
        throw this.unreadable(location, file.isDirectory() ? 'a directory' : 'not a regular file');
      }
      const declared = expectedBytes ?? file.size;
      if (file.size !== declared) throw sizeMismatch(this.kind, file.size, declared);
      return await readDeclaredSize(chunksOf(handle, declared + 1), declared, this.kind);
    } catch (error) {
      if (error instanceof InvalidMessageError || error instanceof ClaimCheckStoreUnavailableError)
        throw error;
      return this.failedRead(location, error);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** A failed open or read: a missing body, a refused entry, or an outage of the store. */
  private async failedRead(location: string, error: unknown): Promise<undefined> {
    const failure = fileReadFailure(error);
    if (failure === 'outage') throw this.unavailable(error);
    // Missing or refused only where the store really is; an empty mount point is an outage, not the message's fault.
    await this.requireMarker();
    if (failure === 'missing') return undefined;
    throw this.unreadable(location, (error as NodeJS.ErrnoException).code ?? errorMessage(error));
  }

  private unreadable(location: string, what: string): InvalidMessageError {
    return new InvalidMessageError(
      'claim-check-unreadable',
      `the filesystem claim-check store cannot serve '${location}' (${what}): the store writes only regular files, never links or directories`,
    );
  }

  async delete(location: string): Promise<void> {
    await this.run(() => rm(join(this.directory, location), { force: true }));
  }

  async deleteExpired(
    limit: number,
    now = new Date(),
    keep: ReadonlySet<string> = new Set(),
  ): Promise<number> {
    let deleted = 0;
    for (const name of await this.names()) {
      if (deleted >= limit) break;
      const expiry = expiryOfName(name);
      if (expiry && expiry <= now && !keep.has(name)) {
        await rm(join(this.directory, name), { force: true });
        deleted += 1;
      }
    }
    return deleted;
  }

  async stats(): Promise<ClaimCheckStoreStats> {
    let bytes = 0;
    let oldestAt: Date | undefined;
    const names = await this.names();
    for (const name of names) {
      bytes += (await stat(join(this.directory, name)).catch(() => ({ size: 0 }))).size;
      const createdAt = createdAtOfId(name.slice(11));
      if (!oldestAt || createdAt < oldestAt) oldestAt = createdAt;
    }
    return { bodies: names.length, bytes, oldestAt };
  }

  private async names(): Promise<string[]> {
    const entries = await this.run(() => readdir(this.directory).catch(missingAsEmpty));
    return entries.filter((name) => OBJECT_NAME.test(name));
  }

  private async requireMarker(): Promise<void> {
    const marker = join(this.directory, FILESYSTEM_STORE_MARKER);
    if ((await stat(marker).catch(() => undefined))?.isFile()) return;
    throw new ClaimCheckStoreUnavailableError(
      this.kind,
      `${marker} is missing: the volume is not mounted, or the directory was never set up (create the marker once with the volume)`,
    );
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.unavailable(error);
    }
  }

  private unavailable(error: unknown): ClaimCheckStoreUnavailableError {
    return new ClaimCheckStoreUnavailableError(this.kind, errorMessage(error), { cause: error });
  }
}

/** The file's bytes from its start, in chunks, up to `limit` bytes. */
async function* chunksOf(handle: FileHandle, limit: number): AsyncGenerator<Uint8Array> {
  for (let position = 0; position < limit;) {
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, limit - position));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield chunk.subarray(0, bytesRead);
  }
}

function missingAsEmpty(error: unknown): string[] {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
  throw error;
}
