/** The exchange types the in-memory broker routes as RabbitMQ does. */
export type ExchangeType = 'direct' | 'topic' | 'fanout' | 'headers';

/** A binding from an exchange to a queue or to another exchange. */
export interface Binding {
  readonly destination: string;
  readonly toExchange: boolean;
  readonly pattern: string;
  readonly args: Readonly<Record<string, unknown>>;
}

/**
 * Whether a topic binding `pattern` matches `routingKey`: words are separated by dots, `*` stands for exactly
 * one word and `#` for zero or more, as in RabbitMQ's topic exchange.
 */
export function topicMatches(pattern: string, routingKey: string): boolean {
  return matchWords(pattern.split('.'), 0, routingKey === '' ? [] : routingKey.split('.'), 0);
}

function matchWords(pattern: string[], p: number, key: string[], k: number): boolean {
  if (p === pattern.length) return k === key.length;
  const word = pattern[p];
  if (word === '#') {
    for (let skip = k; skip <= key.length; skip++) if (matchWords(pattern, p + 1, key, skip)) return true;
    return false;
  }
  if (k === key.length) return false;
  return (word === '*' || word === key[k]) && matchWords(pattern, p + 1, key, k + 1);
}

/** Whether a headers binding's arguments match a message's headers (`x-match` `all`, the default, or `any`). */
export function headersMatch(
  args: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, unknown>>,
): boolean {
  const wanted = Object.entries(args).filter(([name]) => !name.startsWith('x-'));
  const matches = ([name, value]: [string, unknown]) => name in headers && headers[name] === value;
  return args['x-match'] === 'any' ? wanted.some(matches) : wanted.every(matches);
}

/**
 * The bindings of an exchange a message goes to, by type, as RabbitMQ routes: a binding matches when any of the
 * message's routing keys does (its own, then those of its `CC` and `BCC` headers), and counts once.
 */
export function route(
  type: ExchangeType,
  bindings: readonly Binding[],
  routingKeys: readonly string[],
  headers: Readonly<Record<string, unknown>>,
): Binding[] {
  switch (type) {
    case 'fanout':
      return [...bindings];
    case 'direct':
      return bindings.filter((binding) => routingKeys.includes(binding.pattern));
    case 'topic':
      return bindings.filter((binding) => routingKeys.some((key) => topicMatches(binding.pattern, key)));
    case 'headers':
      return bindings.filter((binding) => headersMatch(binding.args, headers));
  }
}
