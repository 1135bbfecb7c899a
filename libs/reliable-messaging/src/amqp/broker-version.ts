/**
 * Whether the broker's `version` server property (a string, or a Buffer from some clients) is `since` or later.
 * An unreadable version counts as older: the caller then keeps to what every supported broker does.
 */
export function brokerVersionAtLeast(serverVersion: unknown, since: readonly [number, number]): boolean {
  const text =
    typeof serverVersion === 'string'
      ? serverVersion
      : Buffer.isBuffer(serverVersion)
        ? serverVersion.toString()
        : '';
  const match = /^(\d+)\.(\d+)/.exec(text);
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > since[0] || (major === since[0] && minor >= since[1]);
}
