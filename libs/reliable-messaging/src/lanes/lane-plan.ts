import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys } from '../options/known-keys';
import { assertLaneName, LANE_OPTION_KEYS, MAX_LANES, type LaneOptions } from '../options/lane.options';
import { RATE_LIMIT_OPTION_KEYS } from '../options/rate-limit.options';
import { laneFallbackName, laneRouterName, type ConsumerLane } from './consumer-lane';

/** A consumer's lanes, checked, in declaration order, and which of them is the default. */
export interface ResolvedLanes {
  readonly lanes: ReadonlyArray<{ readonly name: string; readonly options: LaneOptions }>;
  readonly defaultLane: string;
}

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
    assertKnownKeys(options, LANE_OPTION_KEYS, where, `lanes.${name}.`);
    const { rateLimit } = options as LaneOptions;
    if (typeof rateLimit === 'object' && rateLimit !== null) {
      assertKnownKeys(rateLimit, RATE_LIMIT_OPTION_KEYS, where, `lanes.${name}.rateLimit.`);
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
