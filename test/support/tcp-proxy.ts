import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (PostgreSQL, RabbitMQ), so a spec can take that server
 * away from one app without stopping it for everyone: `cut()` resets every open connection and every new one,
 * as a server that went away does, and counts the connections it refused (how often the app tried);
 * `restore()` passes connections through again. Point the app under test at `port` instead of the server's.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private listeningPort = 0;
  private passing = true;
  private refused = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Starts a proxy to `host:port` on a free local port. */
  static async start(host: string, port: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(host, port);
    await proxy.listen();
    return proxy;
  }

  /** `url` (a postgres:// or amqp:// URL) with its host and port replaced by the proxy's. */
  route(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.listeningPort);
    return parsed.toString();
  }

  /** The local port the app should connect to. */
  get port(): number {
    return this.listeningPort;
  }

  /** Whether the proxy currently passes connections through. */
  get isUp(): boolean {
    return this.passing;
  }

  /** Connections refused since the proxy was started. */
  get refusedConnections(): number {
    return this.refused;
  }

  /** Connections open through the proxy right now. */
  get openConnections(): number {
    return this.sockets.size / 2;
  }

  /** Resets every open connection, and from now on every new one: the app's connections die and cannot return. */
  cut(): void {
    this.passing = false;
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
  }

  /** Passes new connections through again. */
  restore(): void {
    this.passing = true;
  }

  /** Resets every connection and stops listening. */
  async close(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private listen(port = 0): Promise<void> {
    const server = createServer((client) => this.pipe(client));
    return new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        const address = server.address();
        if (address && typeof address === 'object') this.listeningPort = address.port;
        this.server = server;
        resolve();
      });
    });
  }

  private pipe(client: Socket): void {
    if (!this.passing) {
      this.refused++;
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.setNoDelay(true);
      // A reset on one side is expected when the proxy is cut; it must never crash the spec's process.
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        (socket === client ? upstream : client).destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
