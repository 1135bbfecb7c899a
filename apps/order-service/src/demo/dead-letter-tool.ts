import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DeadLetterOperations } from 'nestjs-reliable-messaging-admin';
import { AppModule } from '../app.module';
import { enterToolMode } from '../cli/tool-mode';

/**
 * The module's dead-letter operations on the demo's app, booted in this process as the `npm run dlq` command
 * line boots them: the app's module in tool mode (no consumers, no outbox relay) on the run's database and
 * namespace. Close it when done.
 */
export async function openDeadLetterTool(
  appEnv: Readonly<Record<string, string>>,
): Promise<{ operations: DeadLetterOperations; close: () => Promise<void> }> {
  // NOTE: the app reads its configuration from process.env; the demo itself has read its own already.
  Object.assign(process.env, appEnv);
  enterToolMode();
  const app: INestApplicationContext = await NestFactory.createApplicationContext(AppModule, {
    logger: ['error'],
    abortOnError: false,
  });
  return { operations: app.get(DeadLetterOperations), close: () => app.close() };
}
