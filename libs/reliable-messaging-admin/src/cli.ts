/**
 * The `dlq` command line, imported as `nestjs-reliable-messaging-admin/cli`, for an app that serves it with its
 * own module (its own `dlq` script). The package's `dlq` bin runs the same command line without any app: it boots
 * a minimal context from environment variables (see docs/operations.md).
 */

/** The command line: build it on an app context, or run it and get its exit code. */
export {
  createDeadLetterCli,
  runDeadLetterCli,
  CLI_EXIT,
  type CliApp,
  type DeadLetterCliIo,
} from './cli/dead-letter-cli';
/** The app context the `dlq` bin boots: the core module in tool mode (no consumers, no relay) and the admin module. */
export { createToolContext, toolOptionsFromEnv, type ToolEnvironment } from './cli/tool-context';
