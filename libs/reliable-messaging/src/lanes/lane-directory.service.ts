import { Inject, Injectable } from '@nestjs/common';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { ConfigurationError } from '../errors/configuration.error';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { isLaneName } from '../options/lane.options';

/**
 * The lane names a message may be published to: the module's `lanes` option and the lanes of this app's own
 * consumers. A publisher cannot see other apps' consumers, so a name outside these is taken for a typo and
 * refused, rather than quietly sent to every consumer's default lane.
 */
@Injectable()
export class LaneDirectory {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly registry: ConsumerRegistry,
  ) {}

  /** Every lane name this app knows, sorted. */
  known(): string[] {
    const names = new Set(this.options.lanes);
    for (const consumer of this.registry.discoveredConsumers) {
      if (consumer.lane) names.add(consumer.lane.name);
    }
    return [...names].sort();
  }

  /** `lane` when it is a known lane; a ConfigurationError naming the known ones otherwise. */
  check(type: string, lane: unknown): string {
    const known = this.known();
    if (isLaneName(lane) && known.includes(lane)) return lane;
    const shown = typeof lane === 'string' ? `'${lane.slice(0, 80)}'` : typeof lane;
    throw new ConfigurationError(
      `message '${type}': unknown lane ${shown}; ` +
        (known.length > 0 ? `the known lanes are ${known.join(', ')}. ` : 'this app knows no lanes. ') +
        "A lane is known when a @Consume({ lanes }) of this app declares it, or when the module's `lanes` option names it",
    );
  }
}
