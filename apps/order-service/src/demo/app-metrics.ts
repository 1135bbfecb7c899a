/**
 * The sum of the samples of metric `name` whose labels include `labels`, read from a Prometheus text page
 * (`GET /metrics`); 0 when there is none.
 */
export function metricTotal(page: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of page.split('\n')) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!sample || sample[1] !== name) continue;
    const found = new Map<string, string>();
    for (const label of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      found.set(label[1], label[2]);
    }
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value)) total += Number(sample[3]);
  }
  return total;
}
