import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { waitFor } from './wait-for';

/** How a {@link ChildApp} is started. */
export interface ChildAppOptions {
  /** Added to (and overriding) this process's environment; `undefined` removes a variable. Default: none. */
  env?: Record<string, string | undefined>;
  /** Command-line arguments after the script. Default: none. */
  args?: string[];
}

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const running = new Set<ChildApp>();

/**
 * A compiled node script (`npm run build` first) running as a child process, so that fault tests can kill the app
 * for real. Its stdout and stderr are collected line by line.
 */
export class ChildApp {
  /** Every line printed so far, stdout and stderr interleaved in arrival order. */
  readonly lines: string[] = [];
  /** Lines printed on stdout. */
  readonly stdout: string[] = [];
  /** Lines printed on stderr. */
  readonly stderr: string[] = [];
  private exit?: ChildExit;
  private readonly exited: Promise<ChildExit>;

  private constructor(
    /** The script, as given. */
    readonly script: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolveExit) => {
      // 'close' rather than 'exit': it comes after stdout and stderr have ended, so every line is collected.
      child.on('close', (code, signal) => {
        this.exit = { code, signal };
        running.delete(this);
        resolveExit(this.exit);
      });
    });
    // A failed kill() is reported as an 'error' event, which would otherwise be thrown from the emitter.
    child.on('error', (error) => this.lines.push(`[child-app] ${error.message}`));
    this.collect(child.stdout, this.stdout);
    this.collect(child.stderr, this.stderr);
  }

  /**
   * Starts `node <script>`, the script's path taken relative to `process.cwd()` (the repository root under Jest).
   * Jest's `NODE_OPTIONS` (`--experimental-vm-modules`) is not passed on, so the app runs as `npm start` runs it.
   */
  static start(script: string, options: ChildAppOptions = {}): ChildApp {
    const path = resolve(process.cwd(), script);
    if (!existsSync(path)) throw new Error(`${path} does not exist: run \`npm run build\` first`);
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: undefined };
    for (const [key, value] of Object.entries(options.env ?? {})) env[key] = value;
    for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
    const child = spawn(process.execPath, [path, ...(options.args ?? [])], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const app = new ChildApp(script, child);
    running.add(app);
    return app;
  }

  /** Kills every child app still running, e.g. in `afterAll`, so a failed test leaves no process behind. */
  static async killAll(): Promise<void> {
    await Promise.all([...running].map((app) => app.stop('SIGKILL')));
  }

  /** The child's process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the child has exited. */
  get hasExited(): boolean {
    return this.exit !== undefined;
  }

  /**
   * Resolves with the first line (already printed or still to come) that matches `pattern`. Rejects when the child
   * exits first or after `timeoutMs` (default 30 s), quoting the child's last lines.
   */
  async waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const find = (): string | undefined => this.lines.find((line) => pattern.test(line));
    const exitedFirst = new AbortController();
    void this.exited.then(() =>
      exitedFirst.abort(
        new Error(
          `${this.script} exited${this.describeExit()} before printing a line matching ${pattern}; ` +
            `last lines:\n${this.tail()}`,
        ),
      ),
    );
    await waitFor(
      () => `a line matching ${pattern} from ${this.script}; last lines:\n${this.tail()}`,
      () => find() !== undefined,
      { timeoutMs, intervalMs: 20, signal: exitedFirst.signal },
    );
    return find() as string;
  }

  /** Sends `signal` (default SIGTERM) to the child; does nothing once it has exited. */
  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (!this.exit) this.child.kill(signal);
  }

  /** Resolves with how the child ended, or rejects after `timeoutMs` (default 30 s) if it is still running. */
  async waitForExit(timeoutMs = 30_000): Promise<ChildExit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`${this.script} did not exit within ${timeoutMs} ms; last lines:\n${this.tail()}`),
          ),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `signal` and awaits the exit; a child still running after `timeoutMs` (default 30 s) is SIGKILLed. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 30_000): Promise<ChildExit> {
    this.kill(signal);
    try {
      return await this.waitForExit(timeoutMs);
    } catch {
      this.kill('SIGKILL');
      return this.exited;
    }
  }

  private collect(stream: NodeJS.ReadableStream | null, into: string[]): void {
    if (!stream) return;
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      into.push(line);
      this.lines.push(line);
    });
  }

  private describeExit(): string {
    if (!this.exit) return '';
    return this.exit.signal ? ` (killed by ${this.exit.signal})` : ` (exit code ${this.exit.code})`;
  }

  private tail(count = 20): string {
    return this.lines.slice(-count).join('\n');
  }
}
