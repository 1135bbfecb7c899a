// NOTE: the names live apart from the entities so that code on the root entry point's runtime path (the schema
// check, the claim-check store) can name a table without loading TypeORM's decorators.

/** The outbox table's name. */
export const OUTBOX_TABLE = 'rm_outbox';

/** The inbox table's name. */
export const INBOX_TABLE = 'rm_inbox';

/** The claim-check bodies table's name. */
export const CLAIM_CHECK_TABLE = 'rm_claim_check';

/** The scheduled messages table's name: messages waiting for their delivery time before they enter the outbox. */
export const SCHEDULED_TABLE = 'rm_scheduled';
