import type { ReliableMessagingModuleOptions } from 'nestjs-reliable-messaging';

/** Set by a command-line tool before it boots the app: the app then consumes nothing and relays nothing. */
export const TOOL_MODE_ENV = 'ORDER_SERVICE_TOOL_MODE';

/** Marks this process as a tool (the `dlq` command line): call before creating the app context. */
export function enterToolMode(): void {
  process.env[TOOL_MODE_ENV] = '1';
}

/** The messaging options of a tool process: no consumers and no outbox relay; none otherwise. */
export function toolModeMessagingOptions(): Partial<ReliableMessagingModuleOptions> {
  return process.env[TOOL_MODE_ENV] === '1' ? { consumersEnabled: false, outbox: { relay: false } } : {};
}

/** Whether this process is a tool: it leaves pruning idempotency keys to the service. */
export function isToolMode(): boolean {
  return process.env[TOOL_MODE_ENV] === '1';
}
