#!/usr/bin/env node
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { runDeadLetterCli } from '@app/reliable-messaging/dead-letters';
import { AppModule } from '../app.module';
import { enterToolMode } from './tool-mode';

/**
 * The order service's `dlq` command line: inspect, fix and replay dead letters, and retry or discard parked
 * outbox rows (`--help` lists the commands). In production run the built file, `node
 * dist/apps/order-service/src/cli/dlq.js` (or the `dlq` bin), which never builds; `npm run dlq` rebuilds
 * `dist` first and is for development. The app context boots only once the arguments parsed, with no consumers
 * and no outbox relay, so it only reads, replays and moves rows; `--help` and usage errors connect to nothing.
 */
async function main(): Promise<void> {
  enterToolMode();
  process.exitCode = await runDeadLetterCli(
    () =>
      NestFactory.createApplicationContext(AppModule, {
        logger: ['error', 'warn'],
        abortOnError: false,
      }),
    process.argv,
  );
}

main().catch((error: unknown) => {
  console.error(`dlq: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
