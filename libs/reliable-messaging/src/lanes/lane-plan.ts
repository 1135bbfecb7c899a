import { ConfigurationError } from '../errors/configuration.error';
import { assertLaneName, MAX_LANES, type LaneOptions } from '../options/lane.options';
import { laneFallbackName, laneRouterName, type ConsumerLane } from './consumer-lane';

/** A consumer's lanes, checked, in declaration order, and which of them is the default. */
export interface ResolvedLanes {
  readonly lanes: ReadonlyArray<{ readonly name: string; readonly options: LaneOptions }>;
  readonly defaultLane: string;
}

const LANE_SETTINGS = new Set<keyof LaneOptions>(['concurrency', 'prefetch', 'rateLimit', 'maxPriority']);

/**
 * Checks `@Consume({ lanes, defaultLane })`: undefined without lanes; otherwise 1 to MAX_LANES lanes with valid
 * names and only the settings a lane has, and a default lane that is one of them (the first lane unless named).
 */
export function resolveLanesOption(
  value: unknown,
  defaultLane: unknown,
  where: string,
): ResolvedLanes | undefined {
  if (value === undefined) {
    if (defaultLane !== undefined) {
      throw new ConfigurationError(
        `${where}: 'defaultLane' is set without 'lanes'; declare the lanes, or remove it`,
      );
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(
      `${where}: 'lanes' must be an object of lane names, e.g. { urgent: { concurrency: 10 }, bulk: { concurrency: 2 } }`,
    );
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_LANES) {
    throw new ConfigurationError(
      `${where}: 'lanes' must name 1 to ${MAX_LANES} lanes, got ${entries.length}`,
    );
  }
  const lanes = entries.map(([name, options]) => {
    assertLaneName(name, `${where} lanes`);
    if (options === undefined) return { name, options: {} };
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ConfigurationError(
        `${where}: lane '${name}' must be an object of its settings, e.g. { concurrency: 2 }, or {}`,
      );
    }
    const unknown = Object.keys(options).filter((key) => !LANE_SETTINGS.has(key as keyof LaneOptions));
    if (unknown.length > 0) {
      throw new ConfigurationError(
        `${where}: lane '${name}' has no setting '${unknown[0]}'; a lane sets ${[...LANE_SETTINGS].join(', ')}`,
      );
    }
    return { name, options: definedOnly(options) };
  });
  const chosen = defaultLane ?? lanes[0].name;
  if (!lanes.some((lane) => lane.name === chosen)) {
    throw new ConfigurationError(
      `${where}: 'defaultLane' ${JSON.stringify(chosen) ?? typeof chosen} is not one of its lanes (${lanes.map((lane) => lane.name).join(', ')})`,
    );
  }
  return { lanes, defaultLane: chosen as string };
}

/** The lane descriptor of lane number `index` of the consumer of `baseQueue` bound with `sourceBindings`. */
export function consumerLane(
  baseQueue: string,
  sourceBindings: readonly string[],
  resolved: ResolvedLanes,
  index: number,
): ConsumerLane {
  const name = resolved.lanes[index].name;
  return {
    name,
    baseQueue,
    router: laneRouterName(baseQueue),
    fallback: laneFallbackName(baseQueue),
    isDefault: name === resolved.defaultLane,
    sourceBindings,
    last: index === resolved.lanes.length - 1,
  };
}

/** The settings a lane sets itself, so that the consumer's show through where it sets none. */
function definedOnly(options: LaneOptions): LaneOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
