/**
 * The end-to-end specs that run alone (`scripts/run-e2e.mjs`), after the rest have run two at a time. A spec is
 * here when it:
 * - changes the whole broker or PostgreSQL server: stops them, or raises an alarm that blocks every publisher;
 * - asserts how long something took, which a second spec's load on two cores could stretch;
 * - loads the machine itself with several child apps or thousands of messages.
 *
 * Every other spec uses its own queues, exchanges, database and TCP proxies, and can share the services.
 */
module.exports.ALONE = [
  // The whole broker or server.
  'test/fault-matrix.e2e-spec.ts',
  'test/broker-alarm.e2e-spec.ts',
  'test/retry-broker-blocked.e2e-spec.ts',
  // Timed outcomes.
  'test/flow-control.e2e-spec.ts',
  'test/graceful-shutdown.e2e-spec.ts',
  'test/handler-deadline.e2e-spec.ts',
  'test/health.e2e-spec.ts',
  'test/order-service-degradation.e2e-spec.ts',
  'test/outbox-transaction.e2e-spec.ts',
  'test/reconnect.e2e-spec.ts',
  'test/request-reply.e2e-spec.ts',
  'test/request-reply-responder-crash.e2e-spec.ts',
  'test/topology-mismatch.e2e-spec.ts',
  'test/lanes.e2e-spec.ts',
  'test/queue-oldest-age.e2e-spec.ts',
  'test/database-hang.e2e-spec.ts',
  // Load of their own.
  'test/ordering-by-key.e2e-spec.ts',
  'test/ordering-history.e2e-spec.ts',
  'test/outbox-relay-concurrency.e2e-spec.ts',
  'test/bench-peers.e2e-spec.ts',
  'test/bench-orders.e2e-spec.ts',
  'test/bench-transactional.e2e-spec.ts',
  'test/bench-scale.e2e-spec.ts',
  'test/bench-scheduling.e2e-spec.ts',
  'test/bench-sagas.e2e-spec.ts',
  'test/admin-auth.e2e-spec.ts',
];

/**
 * The specs that run alone, each in a Jest process of its own, after the others: they measure the memory of the
 * process they run in against a pod's limit, which means nothing in a process earlier specs have grown (one
 * that ran after the rest of the group started at 606 MiB).
 */
module.exports.OWN_PROCESS = ['test/dead-letter-memory.e2e-spec.ts'];
