import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { waitFor } from './support/wait-for';

/** The production entry of the command line: the built file, run without any build step. */
const DLQ = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/apps/order-service/src/cli/dlq.js`;

/** A TCP port that counts the connections made to it and closes each at once. */
class CountingPort {
  connections = 0;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  static async open(): Promise<CountingPort> {
    const port = new CountingPort(createServer());
    port.server.on('connection', (socket) => {
      port.connections++;
      port.sockets.add(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => port.server.listen(0, '127.0.0.1', resolve));
    return port;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('the dlq command line: --help and usage errors touch neither the database nor the broker', () => {
  let database: CountingPort;
  let broker: CountingPort;

  beforeAll(async () => {
    database = await CountingPort.open();
    broker = await CountingPort.open();
  });

  afterAll(async () => {
    await database?.close();
    await broker?.close();
  });

  function run(args: string[], env: NodeJS.ProcessEnv = {}) {
    const child = spawn(process.execPath, [DLQ, ...args], {
      env: {
        ...process.env,
        DATABASE_URL: `postgres://nobody@127.0.0.1:${database.port}/nothing`,
        AMQP_URL: `amqp://127.0.0.1:${broker.port}`,
        NO_COLOR: '1',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.on('exit', (code) => resolve({ code, ...output })),
    );
    return { child, exited };
  }

  it.each([
    ['--help', 0, ['--help'], /Usage: dlq \[options\] \[command\][\s\S]*outbox/],
    ['outbox retry --help', 0, ['outbox', 'retry', '--help'], /--allow-empty/],
    ['an unknown option', 2, ['outbox', 'retry', '--frobnicate'], /unknown option '--frobnicate'/],
    ['an unknown command', 2, ['frobnicate'], /unknown command 'frobnicate'/],
    ['a malformed time', 2, ['replay', '--since', 'yesterday'], /'since' must be an ISO 8601 time/],
    ['a malformed limit', 2, ['outbox', 'list', '--limit', 'many'], /--limit must be a positive integer/],
    ['a replay with no selection', 2, ['replay'], /a replay needs a selection/],
    ['a purge with no selection', 2, ['purge', '--yes'], /a purge needs a selection/],
    ['an outbox retry with no selection', 2, ['outbox', 'retry'], /an outbox retry needs a selection/],
    ['an outbox discard with no selection', 2, ['outbox', 'discard', '--yes'], /needs a selection/],
    ['--since after --until', 2, ['list', '--since', '1h', '--until', '2h'], /'since' must be earlier/],
    [
      'an outbox --since after --until',
      2,
      ['outbox', 'retry', '--since', '1h', '--until', '2h'],
      /'since' must be earlier/,
    ],
    ['an outbox --id too long', 2, ['outbox', 'list', '--id', 'x'.repeat(300)], /'ids' must be a list/],
    ['a purge without --yes and no terminal', 2, ['purge', '--all'], /add --yes/],
    ['an outbox discard without --yes and no terminal', 2, ['outbox', 'discard', '42'], /add --yes/],
  ])('%s: exits %i with its text and no connection', async (_what, code, args, text) => {
    const result = await run(args).exited;
    expect(result.code).toBe(code);
    expect(`${result.stdout}${result.stderr}`).toMatch(text);
    expect([database.connections, broker.connections]).toEqual([0, 0]);
  });

  it('--help with an ADMIN_TOKEN the app module refuses: exits 0 with its text and no connection', async () => {
    const result = await run(['--help'], { ADMIN_TOKEN: 'short' }).exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: dlq \[options\] \[command\]/);
    expect([database.connections, broker.connections]).toEqual([0, 0]);
  });

  it('a command that runs boots the app and connects (the check above can fail)', async () => {
    const { child, exited } = run(['queues']);
    await waitFor('a connection to the database', () => database.connections > 0, { timeoutMs: 30_000 });
    child.kill('SIGKILL');
    await exited;
    database.connections = 0;
    broker.connections = 0;
  });
});
