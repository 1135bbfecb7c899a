/**
 * A saga step lost a race for its instance: another step changed it (or started it) after this one read it. The
 * step's transaction is rolled back and the step runs again at once without spending an attempt, up to the saga's
 * `maxConflictReruns`; past that, this error is an ordinary failure, retried by the consumer's policy.
 */
export class SagaConflictError extends Error {
  override readonly name = 'SagaConflictError';
  constructor(
    readonly saga: string,
    readonly key: string,
    readonly expectedVersion: number,
  ) {
    super(
      expectedVersion === 0
        ? `saga '${saga}' instance '${key}' was started by another step meanwhile`
        : `saga '${saga}' instance '${key}' changed after this step read version ${expectedVersion}`,
    );
  }
}
