/**
 * The delay levels retries wait in, NServiceBus-style, with no broker plugin. Level k is a queue whose every
 * message waits 2^k × DELAY_RESOLUTION_MS, then is dead-lettered to level k-1's exchange (level 0's goes to
 * the deliver exchange). A delay is written in binary in the routing key, always 20 bits, highest level first
 * ("0.0.1.0..."); each level's exchange routes a message into its queue when its bit is 1 and straight on to
 * the level below when it is 0. A message enters at the level of its highest set bit, so a process declares
 * only the levels its longest delay needs, and processes needing more or fewer levels share them. Because
 * every message of a level has the same TTL, a level expires strictly in arrival order: a long delay never
 * holds back a short one, and no queue is ever blocked by a waiting message.
 */

/** The smallest step of a retry delay. A drawn delay is rounded to it. */
export const DELAY_RESOLUTION_MS = 100;
/** How many levels there can be (the routing key's bits): the longest delay is (2^20 - 1) × 100 ms, about 29 hours. */
export const DELAY_LEVELS = 20;

/** The headers exchange that hands a message back to its queue when its delay is over. */
export function deliverExchangeName(exchange: string): string {
  return `${exchange}.retry.deliver`;
}

/** The name of level `level`'s exchange and queue (they share it). */
export function delayLevelName(exchange: string, level: number): string {
  return `${exchange}.retry.${String(level).padStart(2, '0')}`;
}

/** Every level name a process may declare, highest first (for tooling that removes them). */
export function delayLevelNames(exchange: string): string[] {
  return Array.from({ length: DELAY_LEVELS }, (_, i) => delayLevelName(exchange, DELAY_LEVELS - 1 - i));
}

/** How long a message waits in level `level`. */
export function levelTtlMs(level: number): number {
  return DELAY_RESOLUTION_MS * 2 ** level;
}

/** The binding pattern of level `level`'s exchange for a routing-key bit of `bit` at that level. */
export function levelBindingPattern(level: number, bit: 0 | 1): string {
  return `${'*.'.repeat(DELAY_LEVELS - 1 - level)}${bit}.#`;
}

/** `delayMs` rounded to the resolution and bounded to what the levels hold. */
export function quantiseDelay(delayMs: number): number {
  const units = Math.min(2 ** DELAY_LEVELS - 1, Math.max(0, Math.round(delayMs / DELAY_RESOLUTION_MS)));
  return units * DELAY_RESOLUTION_MS;
}

/** The routing key that makes a message wait `delayMs` (rounded to the resolution): its delay in binary. */
export function delayRoutingKey(delayMs: number): string {
  const units = quantiseDelay(delayMs) / DELAY_RESOLUTION_MS;
  const bits: number[] = [];
  for (let level = DELAY_LEVELS - 1; level >= 0; level--) bits.push(Math.floor(units / 2 ** level) % 2);
  return bits.join('.');
}

/** The delay a delay-level routing key stands for, in ms; undefined for a key that is not one. */
export function delayOfRoutingKey(routingKey: string): number | undefined {
  const bits = routingKey.split('.');
  if (bits.length !== DELAY_LEVELS || bits.some((bit) => bit !== '0' && bit !== '1')) return undefined;
  return parseInt(bits.join(''), 2) * DELAY_RESOLUTION_MS;
}

/** How many levels (0 to n-1) hold every delay up to `maxDelayMs`. */
export function levelsFor(maxDelayMs: number): number {
  const units = quantiseDelay(maxDelayMs) / DELAY_RESOLUTION_MS;
  return Math.max(1, Math.ceil(Math.log2(units + 1)));
}

/** Where a message that must wait `delayMs` is published: the exchange of its highest level, or the deliver exchange for no wait. */
export function delayEntryExchange(exchange: string, delayMs: number): string {
  const units = quantiseDelay(delayMs) / DELAY_RESOLUTION_MS;
  return units === 0 ? deliverExchangeName(exchange) : delayLevelName(exchange, Math.floor(Math.log2(units)));
}
