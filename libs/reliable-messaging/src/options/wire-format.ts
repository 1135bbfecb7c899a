import { ConfigurationError } from '../errors/configuration.error';

/**
 * A wire format a consumer reads: `envelope`, the module's own (AMQP properties and `rm-` headers around a JSON
 * payload, docs/envelope.md); `nest-rmq`, the `{"pattern": ..., "data": ...}` body that the RMQ `ClientProxy` of
 * @nestjs/microservices sends, for a queue whose producers have not moved yet (docs/migrating.md).
 */
export type WireFormat = 'envelope' | 'nest-rmq';

const WIRE_FORMATS: readonly WireFormat[] = ['envelope', 'nest-rmq'];

/** The wire formats a consumer reads when it names none. */
export const DEFAULT_WIRE_FORMATS: readonly WireFormat[] = ['envelope'];

/**
 * `accept`, checked: known formats, `envelope` among them (the format every migration ends on), and no
 * `nest-rmq` on a reply consumer, whose Nest caller (`ClientProxy.send()`) waits for a reply in Nest's own format.
 */
export function resolveAccept(value: unknown, reply: boolean, where: string): readonly WireFormat[] {
  if (value === undefined) return DEFAULT_WIRE_FORMATS;
  const formats = Array.isArray(value) ? (value as unknown[]) : undefined;
  const unknown = formats?.find((format) => !WIRE_FORMATS.includes(format as WireFormat));
  if (!formats || unknown !== undefined || !formats.includes('envelope')) {
    throw new ConfigurationError(
      `${where}: 'accept' must list 'envelope' and optionally 'nest-rmq', e.g. accept: ['envelope', 'nest-rmq']` +
        (unknown !== undefined ? `; got ${JSON.stringify(unknown)}` : ''),
    );
  }
  if (reply && formats.includes('nest-rmq')) {
    throw new ConfigurationError(
      `${where}: a reply consumer cannot accept 'nest-rmq': Nest's ClientProxy.send() waits for a reply in Nest's own format; ` +
        'move its callers to ReliableMessagingClient (same send() call) and remove nest-rmq from accept',
    );
  }
  return [...new Set(formats as WireFormat[])];
}
