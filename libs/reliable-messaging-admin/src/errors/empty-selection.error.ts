/**
 * A replay, purge, retry or discard whose selection matched nothing, so a typo in an id or a filter is not
 * mistaken for success. Its audit record (none for a dry run) ends `failed`. Pass `allowEmpty` (`--allow-empty`)
 * when matching nothing is a normal outcome, as in a scheduled job. The admin API answers it with 404.
 */
export class EmptySelectionError extends Error {
  override readonly name = 'EmptySelectionError';
  constructor(
    readonly action: string,
    /** The audit record that says so; none for a dry run. */
    readonly auditId?: string,
  ) {
    super(
      `the ${action} matched nothing: check the ids and filters (add --allow-empty, or 'allowEmpty: true', when that is expected)`,
    );
  }
}
