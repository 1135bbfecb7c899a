/**
 * A module or decorator option is wrong, or the broker cannot hold the topology the app declares; the message says
 * which one and how to fix it. Thrown at startup. TopologyMismatchError is the broker's
 * case.
 */
export class ConfigurationError extends Error {
  override readonly name: string = 'ConfigurationError';
}
