/** A module or decorator option is wrong; the message says which one and how to fix it. Thrown at startup. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}
