// NOTE: apart from the entity, so that the revocation store names its table without loading TypeORM's decorators.

/** The table of console sessions signed out before they expired. */
export const ADMIN_SESSION_REVOCATION_TABLE = 'rm_admin_session_revocation';
