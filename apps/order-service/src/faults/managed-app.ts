import { OrderApiClient } from '../demo/order-api.client';
import { describeExit, OrderServiceProcess, type ProcessExit } from '../demo/order-service-process';

const START_TIMEOUT_MS = 90_000;
const RESTART_DELAY_MS = 1_000;

/**
 * The order service under the fault matrix, kept running as a supervisor (Kubernetes, systemd) would: on a fixed
 * HTTP port, so the load finds it again after a restart, and started again when it exits on its own. The faults
 * kill and restart it through here; exits it did not ask for are recorded, since the app is not expected to die
 * of an outage.
 */
export class ManagedApp {
  private current?: OrderServiceProcess;
  private expectingExit = false;
  private supervising = true;
  private restarting?: Promise<void>;
  /** Variables every start adds until the next {@link moveTo}, e.g. another broker's `AMQP_URL`. */
  private placement: Readonly<Record<string, string>> = {};
  /** Exits nobody asked for, e.g. `exit code 1 at 12:00:03`, with the app's last lines. */
  readonly unexpectedExits: string[] = [];
  /** How many times the app was started. */
  starts = 0;
  readonly api: OrderApiClient;

  constructor(
    private readonly script: string,
    private readonly env: Readonly<Record<string, string>>,
    readonly port: number,
    private readonly verbose: boolean,
  ) {
    this.api = new OrderApiClient(`http://127.0.0.1:${port}`);
  }

  /** The running process, if any. */
  get process(): OrderServiceProcess | undefined {
    return this.current;
  }

  /** Starts the app with `extraEnv` added, and waits until it listens. */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    const app = OrderServiceProcess.start(
      this.script,
      { ...this.env, ...this.placement, ...extraEnv, PORT: String(this.port) },
      this.verbose,
    );
    this.current = app;
    this.starts++;
    this.expectingExit = false;
    void app.waitForExit().then((exit) => this.exitedOnItsOwn(app, exit));
    await app.waitUntilListening(START_TIMEOUT_MS);
  }

  /** Sends `signal` and waits for the exit; SIGTERM falls back to SIGKILL after `timeoutMs`. */
  async kill(signal: NodeJS.Signals, timeoutMs = 60_000): Promise<ProcessExit | undefined> {
    await this.restarting;
    const app = this.current;
    if (!app) return undefined;
    this.expectingExit = true;
    const exit =
      signal === 'SIGTERM' ? await app.stop(timeoutMs) : (app.kill(signal), await app.waitForExit());
    this.current = undefined;
    return exit;
  }

  /**
   * Shuts the app down gracefully and starts it again with `placement` added to its environment, in this start and
   * every later one (the supervisor's restarts included); `{}` moves it back.
   */
  async moveTo(placement: Record<string, string>): Promise<void> {
    await this.kill('SIGTERM');
    this.placement = placement;
    await this.start();
  }

  /** Stops supervising and shuts the app down gracefully. */
  async shutdown(): Promise<ProcessExit | undefined> {
    this.supervising = false;
    return this.kill('SIGTERM', 30_000);
  }

  private exitedOnItsOwn(app: OrderServiceProcess, exit: ProcessExit): void {
    if (this.expectingExit || app !== this.current || !this.supervising) return;
    this.unexpectedExits.push(
      `${describeExit(exit)} at ${new Date().toISOString()}; last lines:\n${app.tail.slice(-10).join('\n')}`,
    );
    this.current = undefined;
    this.restarting = new Promise<void>((resolve) => setTimeout(resolve, RESTART_DELAY_MS))
      .then(() => (this.supervising ? this.start() : undefined))
      .catch(() => undefined)
      .finally(() => (this.restarting = undefined));
  }
}
