import { randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { ConfigurationError } from '../errors/configuration.error';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { errorMessage } from '../util/error-text';
import { createdAtOfId, expiryOfName, objectName, OBJECT_NAME } from './claim-check-store';
import type {
  ClaimCheckBodyInfo,
  ClaimCheckStore,
  ClaimCheckStoreStats,
} from '../options/claim-check.options';

const SCHEME = 'file:';
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

  async get(location: string): Promise<Buffer | undefined> {
    try {
      return await readFile(join(this.directory, location));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw this.unavailable(error);
      // Missing only where the store really is; an empty mount point is an outage, not a missing body.
      await this.requireMarker();
      return undefined;
    }
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

function missingAsEmpty(error: unknown): string[] {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
  throw error;
}
