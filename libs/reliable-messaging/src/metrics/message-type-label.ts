/** The `type` label of a message whose type is not one its consumer declared, or is missing. */
export const OTHER_TYPE = 'other';

const SAFE_TYPE = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * Maps a delivery's `type` property to a metric label of bounded cardinality: a forged or random type must not
 * create a time series per message. A consumer that declares its message types labels only those; one that
 * accepts any type labels the first `maxDistinct` well-formed types it sees and the rest as `other`.
 */
export function messageTypeLabeller(
  declared: readonly string[],
  maxDistinct = 50,
): (type: unknown) => string {
  const known = new Set(declared);
  const fixed = known.size > 0;
  return (type) => {
    if (typeof type !== 'string' || !SAFE_TYPE.test(type)) return OTHER_TYPE;
    if (known.has(type)) return type;
    if (fixed || known.size >= maxDistinct) return OTHER_TYPE;
    known.add(type);
    return type;
  };
}
