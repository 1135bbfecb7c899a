import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const SCRIPT = resolve(process.cwd(), 'scripts/rabbitmq-cluster.sh');
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** One node of a {@link RabbitCluster}. */
export interface ClusterNode {
  /** 1, 2 or 3, as `scripts/rabbitmq-cluster.sh` numbers them. */
  index: number;
  /** The Erlang node name, e.g. `rm-fault-1@localhost`. */
  name: string;
  /** Its AMQP URL as the guest user (allowed from localhost only, which this is). */
  url: string;
}

/**
 * A 3-node RabbitMQ cluster beside the machine's default node, run by `scripts/rabbitmq-cluster.sh` (nodes
 * `rm-fault-1..3@localhost`, AMQP on 5681-5683, their own Erlang cookie and directories). Whatever happens,
 * `start()` leaves nothing behind once this process is gone: `stop()` removes the cluster, SIGINT, SIGTERM and
 * SIGHUP remove it before the process goes, and a detached watcher removes it after the process ended any other
 * way (a SIGKILL, a crash).
 */
export class RabbitCluster {
  readonly nodes: readonly ClusterNode[];
  private startedInMs = 0;
  private readonly watcher: ChildProcess;
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    this.stopNow();
    process.kill(process.pid, signal);
  };

  private constructor(size: 1 | 3) {
    this.nodes = [1, 2, 3].slice(0, size).map((index) => ({
      index,
      name: `rm-fault-${index}@localhost`,
      url: `amqp://guest:guest@127.0.0.1:${5680 + index}`,
    }));
    // NOTE: detached and unreferenced, so it outlives this process (even its SIGKILL) and then tears down.
    this.watcher = spawn(SCRIPT, ['watch', String(process.pid)], { detached: true, stdio: 'ignore' });
    this.watcher.unref();
    for (const signal of SIGNALS) process.once(signal, this.onSignal);
  }

  /**
   * Starts the nodes and joins them, after tearing down leftovers of an earlier run; `size` 1 starts one node
   * alone, a private broker to restart.
   */
  static async start(size: 1 | 3 = 3): Promise<RabbitCluster> {
    const cluster = new RabbitCluster(size);
    const started = Date.now();
    try {
      await run(SCRIPT, ['up', String(process.pid)], {
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, RM_CLUSTER_SIZE: String(size) },
      });
    } catch (error) {
      await cluster.stop();
      const { stderr } = error as { stderr?: string };
      throw new Error(`the RabbitMQ cluster did not start: ${stderr || String(error)}`, { cause: error });
    }
    cluster.startedInMs = Date.now() - started;
    return cluster;
  }

  /** How long starting and joining the nodes took, in milliseconds. */
  get startupMs(): number {
    return this.startedInMs;
  }

  /** The node called `name`. */
  node(name: string): ClusterNode {
    const node = this.nodes.find((each) => each.name === name);
    if (!node) throw new Error(`${name} is not a node of this cluster`);
    return node;
  }

  /** Runs `rabbitmqctl -q` against `node` and resolves with its output. */
  async ctl(node: ClusterNode, ...args: string[]): Promise<string> {
    const { stdout } = await run(SCRIPT, ['ctl', String(node.index), ...args]);
    return stdout;
  }

  /** The node that leads quorum queue `queue`, as `via` sees it. */
  async leaderOf(queue: string, via: ClusterNode): Promise<ClusterNode> {
    const stdout = await this.ctl(via, 'list_queues', 'name', 'leader', '--no-table-headers');
    const row = stdout
      .split('\n')
      .map((line) => line.split('\t'))
      .find(([name]) => name === queue);
    if (!row) throw new Error(`queue ${queue} is not listed by ${via.name}`);
    return this.node(row[1]);
  }

  /** Kills `node`'s beam.smp (its OS pid from the node's pid file) with SIGKILL: no goodbye to peers or clients. */
  async kill(node: ClusterNode): Promise<void> {
    const { stdout } = await run(SCRIPT, ['pid', String(node.index)]);
    const pid = Number(stdout.trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${node.name} has no pid file`);
    process.kill(pid, 'SIGKILL');
  }

  /** Kills every node, removes their directories and ends the watcher. */
  async stop(): Promise<void> {
    this.forget();
    await run(SCRIPT, ['down']);
  }

  private stopNow(): void {
    this.forget();
    execFileSync(SCRIPT, ['down'], { stdio: 'ignore' });
  }

  private forget(): void {
    for (const signal of SIGNALS) process.off(signal, this.onSignal);
    if (this.watcher.exitCode === null) this.watcher.kill();
  }
}
