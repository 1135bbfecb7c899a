/**
 * When RabbitMQ 3.10 takes a queue or exchange declared again as the same one, and what it answers when it does
 * not, word for word (the module reads that text: amqp/declaration-channel.ts). Found by declaring on RabbitMQ
 * 3.10.8; the transport contract suite (test/transport-contract.e2e-spec.ts) holds it to that.
 */

/** What a declaration says besides its arguments. */
export interface DeclaredFlags {
  durable: boolean;
  autoDelete: boolean;
}

/**
 * The queue arguments RabbitMQ compares, in the order it compares them (`rabbit_amqqueue:declare_args/0`); a
 * queue compares only those its type knows, so another `x-delivery-limit` is refused by a quorum queue and
 * ignored by a classic one. Arguments it does not know are never compared.
 */
const COMPARED_ARGUMENTS = [
  'x-expires',
  'x-message-ttl',
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-dead-letter-strategy',
  'x-max-length',
  'x-max-length-bytes',
  'x-max-in-memory-length',
  'x-max-in-memory-bytes',
  'x-max-priority',
  'x-overflow',
  'x-queue-mode',
  'x-single-active-consumer',
  'x-queue-type',
  'x-quorum-initial-group-size',
  'x-delivery-limit',
  'x-queue-leader-locator',
  'x-queue-master-locator',
] as const;

const NOT_COMPARED_BY: Record<string, ReadonlySet<string>> = {
  classic: new Set([
    'x-dead-letter-strategy',
    'x-max-in-memory-length',
    'x-max-in-memory-bytes',
    'x-quorum-initial-group-size',
    'x-delivery-limit',
    'x-queue-leader-locator',
  ]),
  quorum: new Set(['x-max-priority', 'x-queue-mode', 'x-queue-master-locator']),
};

/** The reason a queue declared again with `flags` and `args` is refused, or undefined when it is the same queue. */
export function queueInequivalence(
  name: string,
  existing: { flags: DeclaredFlags; args: Readonly<Record<string, unknown>> },
  flags: DeclaredFlags,
  args: Readonly<Record<string, unknown>>,
): string | undefined {
  const flag = flagInequivalence('queue', name, existing.flags, flags);
  if (flag) return flag;
  const type = typeof existing.args['x-queue-type'] === 'string' ? existing.args['x-queue-type'] : 'classic';
  const ignored = NOT_COMPARED_BY[type] ?? new Set<string>();
  for (const key of COMPARED_ARGUMENTS) {
    if (ignored.has(key)) continue;
    let [received, current] = [args[key], existing.args[key]];
    // NOTE: a queue declared without a type is a classic queue, and naming that type later changes nothing.
    if (key === 'x-queue-type') {
      received ??= current === 'classic' ? 'classic' : undefined;
      current ??= received === 'classic' ? 'classic' : undefined;
    }
    if (!sameValue(received, current)) return inequivalent(key, 'queue', name, received, current);
  }
  return undefined;
}

/** The reason an exchange declared again is refused, or undefined when it is the same exchange. */
export function exchangeInequivalence(
  name: string,
  existing: { type: string; flags: DeclaredFlags },
  type: string,
  flags: DeclaredFlags,
): string | undefined {
  if (existing.type !== type) return inequivalent('type', 'exchange', name, type, existing.type);
  return flagInequivalence('exchange', name, existing.flags, flags);
}

function flagInequivalence(
  kind: 'queue' | 'exchange',
  name: string,
  existing: DeclaredFlags,
  flags: DeclaredFlags,
): string | undefined {
  if (existing.durable !== flags.durable)
    return inequivalent('durable', kind, name, flags.durable, existing.durable);
  if (existing.autoDelete !== flags.autoDelete) {
    return inequivalent('auto_delete', kind, name, flags.autoDelete, existing.autoDelete);
  }
  return undefined;
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (a === undefined && b === undefined);
}

/**
 * RabbitMQ's text: two values are quoted as they are; when one side is missing, the other is given with its
 * AMQP field type (`the value '5' of type 'byte'`) and the missing one as `none`.
 */
function inequivalent(
  key: string,
  kind: 'queue' | 'exchange',
  name: string,
  received: unknown,
  current: unknown,
): string {
  const both = received !== undefined && current !== undefined;
  const show = (value: unknown) =>
    value === undefined
      ? 'none'
      : both
        ? `'${plain(value)}'`
        : `the value '${plain(value)}' of type '${fieldType(value)}'`;
  return `PRECONDITION_FAILED - inequivalent arg '${key}' for ${kind} '${name}' in vhost '/': received ${show(received)} but current is ${show(current)}`;
}

/** A value as RabbitMQ prints it; queue arguments are numbers, strings and booleans. */
function plain(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return `${value}`;
  return JSON.stringify(value);
}

/** The AMQP field type amqplib encodes a value as, named as RabbitMQ names it. */
function fieldType(value: unknown): string {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return 'longstr';
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return 'double';
    if (value >= -128 && value < 128) return 'byte';
    if (value >= -0x8000 && value < 0x8000) return 'short';
    if (value >= -0x80000000 && value < 0x80000000) return 'signedint';
    return 'long';
  }
  return 'table';
}
