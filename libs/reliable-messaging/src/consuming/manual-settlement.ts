import { ConfigurationError } from '../errors/configuration.error';

/**
 * What a handler written for Nest's RMQ transport settles its message with: `ctx.getChannelRef()`, or `ack`,
 * `nack` or `reject` on a variable or property named `channel` (`channel.ack(message)`, `this.channel?.nack(...)`).
 * Only that name: an object of the app's own whose name merely contains it (`this.salesChannel.reject(order)`)
 * is not refused, and a call through another name is still refused when it runs.
 */
const MANUAL_SETTLEMENT =
  /\bgetChannelRef\s*\(|\b(?:channel|channelRef)\s*\??\.\s*(?:ack|nack|reject|ackAll|nackAll)\s*\(/;

/**
 * Refuses, at startup, a handler whose own code settles its message by hand: the module acks after the handler
 * returns, so such a handler would fail on every delivery. What its code calls is read from its source
 * (`Function.prototype.toString`); a call made elsewhere (a helper it calls) is caught when it runs, by the
 * channel `MessageContext.getChannelRef()` returns, which dead-letters the message at once.
 */
export function assertNoManualSettlement(method: unknown, where: string): void {
  if (typeof method !== 'function') return;
  const call = MANUAL_SETTLEMENT.exec(withoutComments(Function.prototype.toString.call(method)));
  if (!call) return;
  const found = call[0].replace(/\s+/g, '').replace(/\($/, '()');
  throw new ConfigurationError(
    `${where}: the handler settles its message by hand (it calls ${found}); the module acks after your handler ` +
      'returns; remove the ack/nack call and its getChannelRef() (docs/handlers.md, "Coming from Nest\'s RMQ transport")',
  );
}

/**
 * The source without its comments, which the compiled handler keeps (a migration note such as "no
 * ctx.getChannelRef().ack() here" is not a call). Naive about `//` inside a string: that only hides the rest of
 * its line from the check, which the runtime refusal still covers.
 */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}
