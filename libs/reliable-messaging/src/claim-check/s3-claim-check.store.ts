import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ConfigurationError } from '../errors/configuration.error';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { errorMessage } from '../util/error-text';
import { createdAtOfId, expiryOfName, objectName, OBJECT_NAME } from './claim-check-store';
import { readDeclaredSize, sizeMismatch } from './stored-body-size';
import type {
  ClaimCheckBodyInfo,
  ClaimCheckStore,
  ClaimCheckStoreStats,
} from '../options/claim-check.options';

/** Where the S3 store keeps bodies. */
export interface S3ClaimCheckStoreOptions {
  /** The client, configured with region, credentials and (for S3-compatible servers) endpoint and path style. */
  client: S3Client;
  bucket: string;
  /** Key prefix of every body, e.g. `claim-check/`. Default: none. */
  prefix?: string;
}

/** Deletes run this many at a time while pruning. */
const DELETE_CONCURRENCY = 16;

/**
 * Bodies as objects in an S3-compatible bucket, through the official `@aws-sdk/client-s3`. A key is the prefix,
 * the body's expiry (epoch seconds, 10 digits) and its id, so a listing returns expired bodies first and pruning
 * stops at the first live one. References look like `s3://<bucket>/<key>`; a reference to another bucket or
 * prefix, or any other key, is refused before a request is made.
 */
export class S3ClaimCheckStore implements ClaimCheckStore {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(options: S3ClaimCheckStoreOptions) {
    if (
      !options?.client ||
      typeof options.bucket !== 'string' ||
      !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)
    ) {
      throw new ConfigurationError(
        'S3ClaimCheckStore: give { client: new S3Client(...), bucket } with a valid bucket name (3 to 63 lower-case letters, digits, dots, hyphens)',
      );
    }
    const prefix = options.prefix ?? '';
    if (prefix.includes('..') || prefix.startsWith('/')) {
      throw new ConfigurationError(
        `S3ClaimCheckStore: prefix must not start with '/' or contain '..', got '${prefix}'`,
      );
    }
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = prefix;
  }

  referenceFor(info: ClaimCheckBodyInfo): string {
    return `s3://${this.bucket}/${this.prefix}${objectName(info)}`;
  }

  locate(reference: string): string | undefined {
    const own = `s3://${this.bucket}/${this.prefix}`;
    if (!reference.startsWith(own)) return undefined;
    const name = reference.slice(own.length);
    return OBJECT_NAME.test(name) ? name : undefined;
  }

  async put(location: string, body: Buffer, info: ClaimCheckBodyInfo): Promise<void> {
    await this.run(() =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.prefix + location,
          Body: body,
          ContentType: 'application/octet-stream',
          Metadata: { 'message-type': info.messageType },
        }),
      ),
    );
  }

  /**
   * The answer's headers come before its body: an object whose `Content-Length` is not the declared size is
   * refused and its body never read. The body is then read into one buffer of the declared size and given up at
   * the first byte more, so a server that sends no length, or a wrong one, costs no more memory than that.
   */
  async get(location: string, expectedBytes?: number): Promise<Buffer | undefined> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + location }),
      );
      if (!object.Body) return undefined;
      if (expectedBytes === undefined) return Buffer.from(await object.Body.transformToByteArray());
      if (object.ContentLength !== undefined && object.ContentLength !== expectedBytes) {
        (object.Body as { destroy?: () => void }).destroy?.();
        throw sizeMismatch(this.kind, object.ContentLength, expectedBytes);
      }
      return await readDeclaredSize(object.Body as AsyncIterable<Uint8Array>, expectedBytes, this.kind);
    } catch (error) {
      if (error instanceof InvalidMessageError) throw error;
      if (isMissing(error)) return undefined;
      throw this.classify(error);
    }
  }

  async delete(location: string): Promise<void> {
    await this.run(() =>
      this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + location })),
    );
  }

  async deleteExpired(
    limit: number,
    now = new Date(),
    keep: ReadonlySet<string> = new Set(),
  ): Promise<number> {
    const expired: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.run(() =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix,
            ContinuationToken: token,
            MaxKeys: Math.min(1000, limit),
          }),
        ),
      );
      let live = false;
      for (const object of page.Contents ?? []) {
        const name = (object.Key ?? '').slice(this.prefix.length);
        const expiry = expiryOfName(name);
        if (!expiry || keep.has(name)) continue;
        if (expiry > now) {
          live = true;
          break;
        }
        expired.push(object.Key as string);
        if (expired.length >= limit) break;
      }
      token = live || expired.length >= limit ? undefined : page.NextContinuationToken;
    } while (token);
    for (let at = 0; at < expired.length; at += DELETE_CONCURRENCY) {
      await Promise.all(
        expired
          .slice(at, at + DELETE_CONCURRENCY)
          .map((key) =>
            this.run(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))),
          ),
      );
    }
    return expired.length;
  }

  async stats(): Promise<ClaimCheckStoreStats> {
    let bodies = 0;
    let bytes = 0;
    let oldestAt: Date | undefined;
    let token: string | undefined;
    do {
      const page = await this.run(() =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token }),
        ),
      );
      for (const object of page.Contents ?? []) {
        const name = (object.Key ?? '').slice(this.prefix.length);
        if (!OBJECT_NAME.test(name)) continue;
        bodies += 1;
        bytes += object.Size ?? 0;
        const createdAt = createdAtOfId(name.slice(11));
        if (!oldestAt || createdAt < oldestAt) oldestAt = createdAt;
      }
      token = page.NextContinuationToken;
    } while (token);
    return { bodies, bytes, oldestAt };
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.classify(error);
    }
  }

  /**
   * An outage unless the request itself was wrong: no answer, a server error, and also credentials refused
   * (401, 403), a bucket that is not there (404 NoSuchBucket), a timeout or throttling (408, 429). None of those
   * is the message's fault, so none may spend its attempts or dead-letter it. Another 4xx is the caller's to see.
   */
  private classify(error: unknown): unknown {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== undefined && status < 500 && !OUTAGE_STATUSES.has(status)) return error;
    return new ClaimCheckStoreUnavailableError(this.kind, errorMessage(error), { cause: error });
  }
}

/** 4xx answers that say the store cannot serve anyone right now, not that this request was wrong. */
const OUTAGE_STATUSES = new Set([401, 403, 404, 408, 429]);

/** Only `NoSuchKey` says the body is missing; a 404 for a missing bucket is an outage (see `classify`). */
function isMissing(error: unknown): boolean {
  return (error as { name?: string }).name === 'NoSuchKey';
}
