import { brokerVersionAtLeast } from '../amqp/broker-version';

/** The first RabbitMQ version that takes `x-consumer-timeout` per consumer (and per queue). */
export const CONSUMER_TIMEOUT_ARGUMENT_SINCE = [3, 12] as const;

/**
 * Whether the broker (its `version` server property) accepts the `x-consumer-timeout` argument. Older brokers
 * only have the global `consumer_timeout` of rabbitmq.conf (30 minutes by default).
 */
export function supportsConsumerTimeoutArgument(serverVersion: unknown): boolean {
  return brokerVersionAtLeast(serverVersion, CONSUMER_TIMEOUT_ARGUMENT_SINCE);
}

/**
 * The basic.consume arguments that set the broker's acknowledgement timeout for one consumer, where the broker
 * supports it. A consumer argument rather than a queue argument: it takes precedence over queue arguments and
 * policies, and it can change from one deploy to the next without redeclaring the queue.
 */
export function consumerTimeoutArguments(serverVersion: unknown, timeoutMs: number): Record<string, unknown> {
  return supportsConsumerTimeoutArgument(serverVersion) ? { 'x-consumer-timeout': timeoutMs } : {};
}
