import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { runDeadLetterCli } from '@app/reliable-messaging/dead-letters';
import { AppModule } from '../app.module';
import { enterToolMode } from './tool-mode';

/**
 * `npm run dlq -- <command>`: inspect, fix and replay the order service's dead letters (`--help` lists the
 * commands). Boots the app context with no consumers and no outbox relay, so it only reads and replays.
 */
async function main(): Promise<void> {
  enterToolMode();
  const app = await NestFactory.createApplicationContext(AppModule, {
    logger: ['error', 'warn'],
    abortOnError: false,
  });
  let code: number;
  try {
    code = await runDeadLetterCli(app, process.argv);
  } finally {
    await app.close();
  }
  process.exitCode = code;
}

main().catch((error: unknown) => {
  console.error(`dlq: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
