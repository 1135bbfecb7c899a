// NOTE: apart from the entity, so that the audit service names its table without loading TypeORM's decorators.

/** The dead-letter audit table's name. */
export const DEAD_LETTER_AUDIT_TABLE = 'rm_dead_letter_audit';
