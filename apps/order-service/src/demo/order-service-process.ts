import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** How the app's process ended. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const LISTENING = /order service listening on port (\d+)/;
const KEPT_LINES = 40;

/** The order service run as a child process from its compiled `main.js`, its log kept for the summary. */
export class OrderServiceProcess {
  private readonly recent: string[] = [];
  private readonly lineWaiters = new Set<{ pattern: RegExp; resolve: (line: string) => void }>();
  private readonly exited: Promise<ProcessExit>;
  private exit?: ProcessExit;
  private errors = 0;
  private port?: number;

  private constructor(
    private readonly child: ChildProcess,
    echo: boolean,
  ) {
    this.exited = new Promise((resolve) =>
      child.on('close', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      }),
    );
    child.on('error', (error) => this.keep(`[demo] ${error.message}`));
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        this.keep(line);
        for (const waiter of this.lineWaiters) {
          if (waiter.pattern.test(line)) waiter.resolve(line);
        }
        if (/\bERROR\b/.test(line)) this.errors++;
        const listening = LISTENING.exec(line);
        if (listening) this.port = Number(listening[1]);
        if (echo) process.stdout.write(`    app | ${line}\n`);
      });
    }
  }

  /** Starts `node <script>` with `env` added to this process's environment, and Node's options `nodeArgs`. */
  static start(
    script: string,
    env: Record<string, string>,
    echo = false,
    nodeArgs: readonly string[] = [],
  ): OrderServiceProcess {
    const child = spawn(process.execPath, [...nodeArgs, script], {
      env: { ...process.env, ...env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new OrderServiceProcess(child, echo);
  }

  /** The process id, while it runs. */
  get pid(): number | undefined {
    return this.exit ? undefined : this.child.pid;
  }

  /** Sends `signal` to the app at once, without waiting for it to exit. */
  kill(signal: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(signal);
  }

  /** Resolves with how the app ended, once it has. */
  waitForExit(): Promise<ProcessExit> {
    return this.exited;
  }

  /** Resolves with the first line matching `pattern` logged from now on; rejects on exit or after `timeoutMs`. */
  async waitForLine(pattern: RegExp, timeoutMs: number): Promise<string> {
    let waiter: { pattern: RegExp; resolve: (line: string) => void } | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        new Promise<string>((resolve) => this.lineWaiters.add((waiter = { pattern, resolve }))),
        this.exited.then((exit) => {
          throw new Error(`the order service exited (${describeExit(exit)}) before logging ${pattern}`);
        }),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the order service did not log ${pattern} within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      if (waiter) this.lineWaiters.delete(waiter);
      clearTimeout(timer);
    }
  }

  /** Lines the app logged at ERROR level. */
  get errorCount(): number {
    return this.errors;
  }

  /** The app's last log lines. */
  get tail(): string[] {
    return [...this.recent];
  }

  /** Resolves with the HTTP port once the app says it listens; rejects if it exits first or takes too long. */
  async waitUntilListening(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.port !== undefined) return this.port;
      if (this.exit) throw new Error(`the order service exited (${describeExit(this.exit)}) while starting`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the order service did not start listening within ${timeoutMs} ms`);
  }

  /** Asks the app to shut down gracefully (SIGTERM), and kills it if it has not exited within `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<ProcessExit> {
    if (this.exit) return this.exit;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private keep(line: string): void {
    this.recent.push(line);
    if (this.recent.length > KEPT_LINES) this.recent.shift();
  }
}

/** `exit code 1`, or `killed by SIGKILL`. */
export function describeExit(exit: ProcessExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}
