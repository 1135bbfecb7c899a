import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IDEMPOTENCY_KEY_HEADER } from '../receipt/http-receipt-client';

/** What the receipt server has seen since it started. */
export interface ReceiptServerStats {
  /** Every `POST /receipts`. */
  calls: number;
  /** Receipts sent: one per idempotency key. */
  sent: number;
  /** Calls with a key already sent, answered with the first receipt: harmless. */
  repeatedCalls: number;
  /** Calls held past the handler's deadline on purpose ({@link FakeReceiptServer.hangNext}). */
  hung: number;
}

interface SentReceipt {
  receiptId: string;
  sentAt: string;
}

/**
 * A receipt service over HTTP for the fault matrix, run by the harness so that it outlives the app: it remembers
 * every idempotency key across the app's restarts, sends one receipt per key, and records every receipt sent per
 * order. An order that got more than one receipt (a call without the key, or under another key) is a receipt sent
 * twice, which is what the matrix counts; a call repeating a key is answered with the first receipt and is
 * harmless. It can hang calls past the handler's deadline, sending the receipt at once but answering late, as a
 * slow service does.
 */
export class FakeReceiptServer {
  private readonly byKey = new Map<string, SentReceipt>();
  private readonly receiptsByOrder = new Map<string, number>();
  private readonly counts: ReceiptServerStats = { calls: 0, sent: 0, repeatedCalls: 0, hung: 0 };
  /** Answers waiting for their latency or their hang. */
  private readonly pending = new Set<NodeJS.Timeout>();
  private hungOpen = 0;
  private hangs: { left: number; ms: number } = { left: 0, ms: 0 };

  private constructor(
    private readonly server: Server,
    /** The base URL, for the app's `RECEIPT_URL`. */
    readonly url: string,
    private readonly latencyMs: number,
  ) {}

  /** Listens on a free port of 127.0.0.1. Each answer takes 0.5 to 1.5 times `latencyMs`. */
  static async start(latencyMs = 20): Promise<FakeReceiptServer> {
    const handler: { receipts?: FakeReceiptServer } = {};
    const server = createServer((request, response) => {
      handler.receipts?.handle(request, response).catch(() => response.destroy());
    });
    // Keep-alive connections outlive an app that was killed; the server must not wait for them on close.
    server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    handler.receipts = new FakeReceiptServer(server, `http://127.0.0.1:${port}`, latencyMs);
    return handler.receipts;
  }

  get stats(): ReceiptServerStats {
    return { ...this.counts };
  }

  /** How many of `orderIds` got more than one receipt. */
  sentTwice(orderIds: Iterable<string>): number {
    let twice = 0;
    for (const id of orderIds) if ((this.receiptsByOrder.get(id) ?? 0) > 1) twice++;
    return twice;
  }

  /** Sends the receipt of the next `count` calls at once but answers them only after `ms`. */
  hangNext(count: number, ms: number): void {
    this.hangs = { left: count, ms };
  }

  /** How many of the calls asked for by {@link hangNext} have not arrived yet. */
  get hangsLeft(): number {
    return this.hangs.left;
  }

  /** Calls held by {@link hangNext} that have not been answered yet. */
  get hanging(): number {
    return this.hungOpen;
  }

  async close(): Promise<void> {
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
    this.hungOpen = 0;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST' || request.url !== '/receipts') {
      response.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    this.counts.calls++;
    const key = request.headers[IDEMPOTENCY_KEY_HEADER];
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { orderId?: unknown };
    if (typeof body.orderId !== 'string') {
      response.writeHead(400).end('orderId is missing');
      return;
    }
    let receipt = typeof key === 'string' ? this.byKey.get(key) : undefined;
    if (receipt) this.counts.repeatedCalls++;
    else {
      receipt = { receiptId: `rcpt_${randomUUID()}`, sentAt: new Date().toISOString() };
      if (typeof key === 'string') this.byKey.set(key, receipt);
      this.receiptsByOrder.set(body.orderId, (this.receiptsByOrder.get(body.orderId) ?? 0) + 1);
      this.counts.sent++;
    }
    const answer = JSON.stringify(receipt);
    const hangMs = this.takeHang();
    if (hangMs !== undefined) this.hungOpen++;
    const timer = setTimeout(
      () => {
        this.pending.delete(timer);
        if (hangMs !== undefined) this.hungOpen--;
        if (!response.destroyed) response.writeHead(201, { 'content-type': 'application/json' }).end(answer);
      },
      hangMs ?? this.latencyMs * (0.5 + Math.random()),
    );
    this.pending.add(timer);
  }

  private takeHang(): number | undefined {
    if (this.hangs.left <= 0) return undefined;
    this.hangs.left--;
    this.counts.hung++;
    return this.hangs.ms;
  }
}
