import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/**
 * A real S3-protocol server (s3rver) on a free port of this machine, its data in a temporary directory: one per
 * spec file. `stop()` and `start()` again keep the port and the data, for an outage of the store.
 */
export class S3TestServer {
  private server?: S3rver;
  private port = 0;

  private constructor(
    private readonly directory: string,
    readonly bucket: string,
  ) {}

  static async start(bucket: string): Promise<S3TestServer> {
    const server = new S3TestServer(await mkdtemp(join(tmpdir(), 'rm-s3-')), bucket);
    await server.start();
    return server;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A client for this server; its requests fail fast while the server is down. */
  client(): S3Client {
    return new S3Client({
      endpoint: this.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      maxAttempts: 1,
    });
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = new S3rver({
      address: '127.0.0.1',
      port: this.port,
      silent: true,
      directory: this.directory,
      configureBuckets: [{ name: this.bucket }],
    });
    this.port = (await server.run()).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }

  /** Stops the server and deletes its data. */
  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.directory, { recursive: true, force: true });
  }
}
