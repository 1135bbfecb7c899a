#!/usr/bin/env node
import 'reflect-metadata';
import { runDeadLetterCli } from './dead-letter-cli';
import { createToolContext } from './tool-context';

/**
 * The package's `dlq` bin: the dead-letter and outbox command line for a pod that has neither the app's source
 * nor a build. It reads the broker and the database from the environment (AMQP_URL, DATABASE_URL, and the
 * exchange names when the app changed them: see ToolEnvironment) and boots only once the arguments checked
 * out, so `--help` and a usage error connect to nothing. It knows no consumers, so name the queue (`--queue`).
 */
async function main(): Promise<void> {
  process.exitCode = await runDeadLetterCli(() => createToolContext(process.env), process.argv);
}

main().catch((error: unknown) => {
  console.error(`dlq: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
