import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { consumerApp } from './consume.bench';
import { Progress } from './harness';
import { DRAIN_SETTINGS_VARIABLE, type DrainReport, type DrainSettings } from './memory.bench';

/**
 * Counts like Progress, and reports this process's memory at the first delivery, every `sampleEvery` messages
 * after it and at the last one; seconds count from the first delivery.
 */
class SampledProgress extends Progress {
  private firstDelivery?: number;

  constructor(
    private readonly total: number,
    private readonly sampleEvery: number,
  ) {
    super(total);
  }

  override started(): void {
    if (this.firstDelivery === undefined) {
      this.firstDelivery = performance.now();
      this.sample();
    }
    super.started();
  }

  override completed(): void {
    super.completed();
    if (this.count % this.sampleEvery === 0 || this.count === this.total) this.sample();
  }

  seconds(): number {
    return this.firstDelivery === undefined ? 0 : (performance.now() - this.firstDelivery) / 1000;
  }

  /**
   * RSS and heap as they are, then the heap a full collection leaves: the heap as sampled swings by the young
   * generation's garbage (about 10 MiB between scavenges), which would hide or fake a leak of that size.
   */
  private sample(): void {
    const { rss, heapUsed } = process.memoryUsage();
    collectGarbage();
    report({
      kind: 'sample',
      drained: this.count,
      seconds: this.seconds(),
      rssBytes: rss,
      heapUsedBytes: heapUsed,
      heapLiveBytes: process.memoryUsage().heapUsed,
    });
  }
}

/** A full collection; the benchmark starts this process with `--expose-gc`. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function report(message: DrainReport): void {
  process.send?.(message);
}

/**
 * Drains the backlog the benchmark pre-published through the module's consumer, in a process of its own so
 * that the benchmark's memory (the publisher, the figures) stays out of the samples.
 */
async function main(): Promise<void> {
  const settings = JSON.parse(process.env[DRAIN_SETTINGS_VARIABLE] ?? '') as DrainSettings;
  const progress = new SampledProgress(settings.messages, settings.sampleEvery);
  const app = consumerApp(
    settings.exchange,
    settings.queue,
    'quorum',
    { current: progress },
    settings.prefetch,
  );
  const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
  await progress.finished;
  report({ kind: 'done', seconds: progress.seconds() });
  await context.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
