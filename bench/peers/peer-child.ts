import { setTimeout as delay } from 'node:timers/promises';
import type { QueueType } from 'nestjs-reliable-messaging';
import { Progress, type Measurement } from '../harness';

/** How long a contender waits after its run before it closes: see runPeer. */
export const ACK_SETTLE_MS = 500;

/** What the peers suite tells a contender's process, through its environment. */
export interface PeerRun {
  /** The queue to drain, declared by the suite with the module's arguments. */
  queue: string;
  /** Its type, for the module's `@Consume()` (which declares its queue itself, with the same arguments). */
  queueType: QueueType;
  /** The module's exchange (its consumer binds the queue to it). */
  exchange: string;
  /** Unacknowledged deliveries at once. */
  prefetch: number;
  /** Messages to drain; they are in the queue before the process starts. */
  messages: number;
  url: string;
}

/** Reads the run from PEERS_QUEUE, PEERS_QUEUE_TYPE, PEERS_EXCHANGE, PEERS_PREFETCH, PEERS_MESSAGES and AMQP_URL. */
export function peerRun(): PeerRun {
  return {
    queue: required('PEERS_QUEUE'),
    queueType: required('PEERS_QUEUE_TYPE') as QueueType,
    exchange: required('PEERS_EXCHANGE'),
    prefetch: Number(required('PEERS_PREFETCH')),
    messages: Number(required('PEERS_MESSAGES')),
    url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  };
}

/**
 * A contender's process: `start` connects and consumes, counting each delivery on `progress`, and resolves with
 * what stops it. When every message is handled, the Measurement goes to stdout as one JSON line, the consumer is
 * stopped and the process exits; on failure the error goes to stderr and the exit code is 1.
 */
export function runPeer(start: (run: PeerRun, progress: Progress) => Promise<() => Promise<void>>): void {
  const run = peerRun();
  // The suite's IPC channel closes when the suite ends, so a contender never outlives it.
  process.on('disconnect', () => process.exit(1));
  const progress = new Progress(run.messages);
  const drain = async (): Promise<void> => {
    const stop = await start(run, progress);
    await progress.finished;
    const measurement: Measurement = progress.measurement();
    process.stdout.write(`${JSON.stringify(measurement)}\n`);
    // NOTE: the clients built on amqp-connection-manager (NestJS's transport, golevelup), closed right after
    // their last acks, leave some of those deliveries unacknowledged on a quorum queue. Every contender pauses
    // alike, outside the timed run, so its acks reach the broker; the suite checks the queue is empty after.
    await delay(ACK_SETTLE_MS);
    await stop();
  };
  drain().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: bench/peers.bench.ts starts this script`);
  return value;
}
