import type { ConsumeOptions } from '../options/consume.options';
import { ConfigurationError } from '../errors/configuration.error';
import type { DiscoveredConsumer } from '../discovery/discovered-consumer';

/** What Nest's `@EventPattern()` and `@MessagePattern()` write on a method (@nestjs/microservices' constants). */
const PATTERN_METADATA = 'microservices:pattern';
const PATTERN_EXTRAS_METADATA = 'microservices:pattern_extras';
const PATTERN_HANDLER_METADATA = 'microservices:handler_type';
const TRANSPORT_METADATA = 'microservices:transport';
/** `PatternHandler.MESSAGE` and `PatternHandler.EVENT`. */
const MESSAGE_HANDLER = 1;
const EVENT_HANDLER = 2;

/**
 * The consumer of an `@EventPattern()` or `@MessagePattern()` method that ReliableMessagingTransport serves (no
 * transport given, or its own), or undefined for any other method. A `@MessagePattern()` is a reply consumer
 * (`reply: true`): its return value answers `ReliableMessagingClient.send()` and `MessagePublisher.request()`.
 * The pattern is the message type bound to the queue; the
 * pattern's extras are `@Consume()` options, so `@EventPattern('order.paid', { queue: 'receipts.order-paid' })`
 * names its queue, and `retry`, `concurrency`, `deadlineMs` and the rest work as on `@Consume()`. Without a
 * `queue` it is `<appId>.<pattern>`.
 */
export function eventPatternConsumer(
  instance: object,
  methodName: string,
  method: object,
  payloadParameterType: unknown,
  context: { transportId: symbol; appId: string },
): DiscoveredConsumer | undefined {
  const handlerType = Reflect.getMetadata(PATTERN_HANDLER_METADATA, method) as number | undefined;
  if (handlerType !== EVENT_HANDLER && handlerType !== MESSAGE_HANDLER) return undefined;
  const decorator = handlerType === EVENT_HANDLER ? '@EventPattern' : '@MessagePattern';
  const transport = Reflect.getMetadata(TRANSPORT_METADATA, method) as unknown;
  if (transport !== undefined && transport !== context.transportId) return undefined;
  const where = `${instance.constructor.name}.${methodName}`;
  const patterns = (Reflect.getMetadata(PATTERN_METADATA, method) as unknown[] | undefined) ?? [];
  if (patterns.length === 0 || !patterns.every((p): p is string => typeof p === 'string')) {
    throw new ConfigurationError(
      `${decorator} on ${where}: ReliableMessagingTransport needs string patterns (message types), got ${JSON.stringify(patterns)}`,
    );
  }
  const extras = (Reflect.getMetadata(PATTERN_EXTRAS_METADATA, method) ?? {}) as Partial<ConsumeOptions>;
  if (extras.queue === undefined && patterns.length > 1) {
    throw new ConfigurationError(
      `${decorator} on ${where}: more than one pattern shares one queue; name it, e.g. ${decorator}([...], { queue: '${context.appId}.${methodName}' })`,
    );
  }
  return {
    instance,
    methodName,
    options: {
      ...extras,
      queue: extras.queue ?? `${context.appId}.${patterns[0]}`,
      messageTypes: extras.messageTypes ?? patterns,
      ...(decorator === '@MessagePattern' ? { reply: true } : {}),
    },
    payloadParameterType,
    decorator,
    contextType: 'rpc',
  };
}
