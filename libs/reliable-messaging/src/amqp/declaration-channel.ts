import type { Channel, ChannelModel } from 'amqplib';
import { TopologyMismatchError } from '../errors/topology-mismatch.error';

const MISMATCH =
  /inequivalent arg '([^']+)' for (queue|exchange) '([^']+)' in vhost '[^']*': received (?:the value )?'?([^']*?)'?(?: of type '[^']*')? but current is (?:the value )?'?([^']*?)'?(?: of type '[^']*')?$/;

/** Runs declarations on a short-lived channel; a PRECONDITION_FAILED becomes a TopologyMismatchError. */
export async function withDeclarationChannel(
  model: ChannelModel,
  work: (channel: Channel) => Promise<void>,
): Promise<void> {
  const channel = await model.createChannel();
  // NOTE: a failed declaration closes the channel with the reason; the 'error' event must be handled or
  // amqplib rethrows it on the connection.
  channel.on('error', () => undefined);
  try {
    await work(channel);
  } catch (error) {
    throw toTopologyError(error);
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** Turns the broker's PRECONDITION_FAILED text into a TopologyMismatchError that says what to do. */
export function toTopologyError(error: unknown): unknown {
  const text = error instanceof Error ? error.message : String(error);
  const match = MISMATCH.exec(text.replace(/"\s*$/, ''));
  if (!match) return error;
  const [, argument, kind, entity, received, current] = match;
  return new TopologyMismatchError(
    kind as 'queue' | 'exchange',
    entity,
    argument,
    received || 'none',
    current || 'none',
  );
}
