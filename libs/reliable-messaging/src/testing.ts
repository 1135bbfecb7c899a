/**
 * For tests, imported as `nestjs-reliable-messaging/testing`: the testing module and its harness, which run an app's
 * handlers on an in-memory broker, and the fault points, which stop the module
 * at one exact moment (between a handler's commit and its ack, between the broker's confirm and the outbox's mark)
 * so a test can kill the process there and prove nothing is lost or applied twice.
 */

/** Install fault points before the app starts; the function returned removes them. */
export {
  installFaultPoints,
  type FaultPoints,
  type AckFault,
  type RelayOutcome,
} from './testing/fault-points';

/** ReliableMessagingModule on an in-memory broker, for tests of an app's own handlers. */
export {
  ReliableMessagingTestingModule,
  type ReliableMessagingTestingOptions,
  type ReliableMessagingTestingAsyncOptions,
} from './testing/reliable-messaging-testing.module';

/** Publishes, delivers raw input, reads outcomes and saga instances, and moves the test's clock. */
export { MessagingHarness, type HarnessClock } from './testing/messaging-harness';

/** What the harness records, and how a delivery ended. */
export type {
  DeliveryOutcome,
  PublishedRecord,
  ConsumedRecord,
  HarnessRecords,
  RecordKind,
} from './testing/harness-records';

/**
 * The in-memory broker the testing module runs on, for tests that look at its queues, and a connection to it
 * shaped as amqplib's (what the contract suite runs its cases through).
 */
export {
  InMemoryBroker,
  type StoredMessage,
  type BrokerEvent,
} from './testing/in-memory-broker/in-memory-broker';
export { InMemoryConnection } from './testing/in-memory-broker/in-memory-connection';
