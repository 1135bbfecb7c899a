// NOTE: the names live apart from the entities so that code on the root entry point's runtime path (the schema
// check, the claim-check store) can name a table without loading TypeORM's decorators.

/** The outbox table's name. */
export const OUTBOX_TABLE = 'rm_outbox';

/** The inbox table's name. */
export const INBOX_TABLE = 'rm_inbox';

/** The claim-check bodies table's name. */
export const CLAIM_CHECK_TABLE = 'rm_claim_check';

/** The saga instances table's name. */
export const SAGA_TABLE = 'rm_saga';

/** The saga history table's name: one row per message a step handled. */
export const SAGA_HISTORY_TABLE = 'rm_saga_history';

/** The scheduled messages table's name: messages waiting for their delivery time before they enter the outbox. */
export const SCHEDULED_TABLE = 'rm_scheduled';
