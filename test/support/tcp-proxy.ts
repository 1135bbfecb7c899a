import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** Default ports of the URL schemes a proxy is put in front of, for URLs that name none. */
const DEFAULT_PORTS: Record<string, number> = {
  'amqp:': 5672,
  'amqps:': 5671,
  'postgres:': 5432,
  'postgresql:': 5432,
};

/**
 * A TCP proxy on 127.0.0.1 in front of one server (the broker, PostgreSQL), so a fault test can break one app's
 * link to it without touching the server or other specs' clients. Point the app at {@link url}; {@link cut}
 * resets every open connection and refuses new ones (each is reset as it arrives, so clients fail at once with
 * ECONNRESET, as against a server that is down) until {@link restore}; {@link stall} instead leaves every
 * connection open and silent, as a network that drops packets does; {@link dropReplies} lets the client's bytes
 * through and drops the server's. {@link close} it in `afterAll`.
 *
 * @example
 * const proxy = await TcpProxy.start(broker.url);
 * const app = await MessagingTestApp.start(broker, { options: { urls: proxy.url } });
 * proxy.cut(); // the broker is unreachable for this app only
 * proxy.restore();
 */
export class TcpProxy {
  private readonly pairs = new Set<{ client: Socket; server: Socket }>();
  private refusing = false;
  private refused = 0;
  private stalling = false;
  /** Connections whose server bytes are dropped: reset on restore, their protocol state lost. */
  private readonly replyless = new Set<{ client: Socket; server: Socket }>();
  /** Connections that arrived while stalled: accepted, never answered. */
  private readonly held = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {}

  /** Starts a proxy to the host and port of `targetUrl` (e.g. `amqp://guest:guest@127.0.0.1:5672`). */
  static async start(targetUrl: string): Promise<TcpProxy> {
    const target = new URL(targetUrl);
    const port = Number(target.port || DEFAULT_PORTS[target.protocol]);
    if (!port) throw new Error(`TcpProxy: no port in ${target.protocol} URL and no default for the scheme`);
    const server = createServer();
    const proxy = new TcpProxy(server, target);
    server.on('connection', (client) => proxy.accept(client, target.hostname, port));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return proxy;
  }

  /** The port the proxy listens on. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The target URL with the proxy's host and port instead (credentials, path and query kept). */
  get url(): string {
    const url = new URL(this.target.toString());
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** Client connections open through the proxy now. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Connections refused since the proxy started: how often the app tried to reach the server while cut. */
  get refusedConnections(): number {
    return this.refused;
  }

  /** Resets every open connection and refuses new ones until {@link restore}. */
  cut(): void {
    this.refusing = true;
    for (const pair of [...this.pairs]) this.drop(pair);
  }

  /**
   * Stops every byte both ways on the open connections, and accepts new ones without ever answering them, until
   * {@link restore}: clients wait on their sockets rather than fail, as behind a network that drops packets.
   */
  stall(): void {
    this.stalling = true;
    for (const { client, server } of this.pairs) {
      client.unpipe(server);
      server.unpipe(client);
      client.pause();
      server.pause();
    }
  }

  /**
   * Drops every byte the server sends on the open connections from now on, while the client's still reach it:
   * the server acts on each request, and the client never hears back (a broker's publisher confirms lost on the
   * way, say). Until {@link cut} or {@link restore}, which reset these connections.
   */
  dropReplies(): void {
    for (const pair of this.pairs) {
      pair.server.unpipe(pair.client);
      pair.server.on('data', () => undefined);
      pair.server.resume();
      this.replyless.add(pair);
    }
  }

  /**
   * Lets connections through again; clients reconnect on their own. After {@link stall} or {@link dropReplies},
   * those connections are reset first, as a peer that lost their state would.
   */
  restore(): void {
    for (const pair of [...this.replyless]) this.drop(pair);
    if (this.stalling) {
      for (const pair of [...this.pairs]) this.drop(pair);
      for (const client of this.held) client.resetAndDestroy();
      this.held.clear();
      this.stalling = false;
    }
    this.refusing = false;
  }

  /** Resets every connection and stops listening. */
  async close(): Promise<void> {
    this.restore();
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    client.on('error', () => undefined);
    if (this.refusing) {
      this.refused++;
      client.resetAndDestroy();
      return;
    }
    if (this.stalling) {
      this.held.add(client);
      client.pause();
      client.on('close', () => this.held.delete(client));
      return;
    }
    const server = connect(port, host);
    const pair = { client, server };
    this.pairs.add(pair);
    server.on('error', () => this.drop(pair));
    client.on('close', () => this.drop(pair));
    server.on('close', () => this.drop(pair));
    client.pipe(server);
    server.pipe(client);
  }

  private drop(pair: { client: Socket; server: Socket }): void {
    this.replyless.delete(pair);
    if (!this.pairs.delete(pair)) return;
    if (!pair.client.destroyed) pair.client.resetAndDestroy();
    pair.server.destroy();
  }
}
