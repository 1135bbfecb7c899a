#!/usr/bin/env node
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { runDeadLetterCli } from 'nestjs-reliable-messaging-admin/cli';
import { enterToolMode } from './tool-mode';

/**
 * The order service's `dlq` command line: inspect, fix and replay dead letters, and retry or discard parked
 * outbox rows (`--help` lists the commands). In production run the built file, `node
 * dist/apps/order-service/src/cli/dlq.js` (or the `dlq` bin), which never builds; `npm run dlq` rebuilds
 * `dist` first and is for development. The app context boots only once the arguments checked out, with no
 * consumers and no outbox relay, so it only reads, replays and moves rows; `--help` and usage errors connect to
 * nothing. The app module is imported only then too: it checks the environment (`ADMIN_TOKEN`) as it loads,
 * which must not stop `--help`.
 */
async function main(): Promise<void> {
  enterToolMode();
  process.exitCode = await runDeadLetterCli(async () => {
    const { AppModule } = await import('../app.module.js');
    return NestFactory.createApplicationContext(AppModule, {
      logger: ['error', 'warn'],
      abortOnError: false,
    });
  }, process.argv);
}

main().catch((error: unknown) => {
  console.error(`dlq: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
