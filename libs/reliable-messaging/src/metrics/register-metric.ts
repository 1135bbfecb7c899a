import type { Metric, Registry } from 'prom-client';

/**
 * Registers `metric` on `registry`, replacing a metric of the same name left there by an earlier instance of
 * the module in this process (an app closed and created again, as tests do): the newest instance reports.
 */
export function registerReplacing<T extends Metric>(registry: Registry, name: string, metric: T): T {
  if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
  registry.registerMetric(metric);
  return metric;
}

/** Removes `metric` from `registry` if it is still the one registered under `name`. */
export function unregisterOwn(registry: Registry, name: string, metric: Metric): void {
  if (registry.getSingleMetric(name) === metric) registry.removeSingleMetric(name);
}
