/**
 * The claim check's stores and options, imported as `nestjs-reliable-messaging/claim-check` (docs/claim-check.md):
 * give the module `claimCheck: { store, thresholdBytes }`, or mark message classes with
 * `@MessageType({ claimCheck: { thresholdBytes } })`. Its table is in `/typeorm`.
 */

/** The module's `claimCheck` option, and a message class's `@MessageType({ claimCheck })`. */
export type { ClaimCheckOptions, MessageClaimCheck } from './options/claim-check.options';
/** What a store implements, and what it reports for the metrics. */
export type {
  ClaimCheckStore,
  ClaimCheckBodyInfo,
  ClaimCheckStoreStats,
} from './options/claim-check.options';
/** Bodies in the module's own PostgreSQL database, table `rm_claim_check`: the default with a `dataSource`. */
export { PostgresClaimCheckStore } from './claim-check/postgres-claim-check.store';
/** Bodies as files in a directory every process mounts. */
export {
  FILESYSTEM_STORE_MARKER,
  FilesystemClaimCheckStore,
} from './claim-check/filesystem-claim-check.store';
/** Bodies as objects in an S3-compatible bucket, through `@aws-sdk/client-s3`. */
export { S3ClaimCheckStore, type S3ClaimCheckStoreOptions } from './claim-check/s3-claim-check.store';
/** The claim-check store could not be reached: a publish sent nothing and may be repeated. */
export { ClaimCheckStoreUnavailableError } from './errors/claim-check-store-unavailable.error';
/** Deletes expired bodies (it runs on its own; `pruneNow()` for scripts) and reads the store's size. */
export { ClaimCheckPruner } from './claim-check/claim-check-pruner.service';
