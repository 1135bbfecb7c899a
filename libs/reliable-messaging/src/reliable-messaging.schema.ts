import { ClaimCheckBodyEntity } from './claim-check/claim-check-body.entity';
import { CreateClaimCheck1767225600005 } from './claim-check/create-claim-check.migration';
import { CreateInbox1767225600001 } from './inbox/create-inbox.migration';
import { InboxMessageEntity } from './inbox/inbox-message.entity';
import { CreateIdempotencyKeys1767225600004 } from './idempotency/create-idempotency-keys.migration';
import { IdempotencyKeyEntity } from './idempotency/idempotency-key.entity';
import { ScopeIdempotencyKeysByCaller1767225600026 } from './idempotency/scope-idempotency-keys-by-caller.migration';
import { CreateOutbox1767225600000 } from './outbox/create-outbox.migration';
import { OutboxMessageEntity } from './outbox/outbox-message.entity';
import { CreateSagas1767225600040 } from './saga/create-sagas.migration';
import { SagaHistoryEntity } from './saga/saga-history.entity';
import { SagaInstanceEntity } from './saga/saga-instance.entity';
import { CreateScheduled1767225600027 } from './scheduling/create-scheduled.migration';
import { ScheduledMessageEntity } from './scheduling/scheduled-message.entity';

/**
 * The module's TypeORM entities (outbox, scheduled messages, inbox, HTTP idempotency keys, claim-check bodies,
 * saga instances and their history): add them to the
 * DataSource's `entities`.
 */
export const RELIABLE_MESSAGING_ENTITIES = [
  OutboxMessageEntity,
  ScheduledMessageEntity,
  InboxMessageEntity,
  IdempotencyKeyEntity,
  ClaimCheckBodyEntity,
  SagaInstanceEntity,
  SagaHistoryEntity,
];

/**
 * The module's TypeORM migrations, oldest first: add them to the DataSource's `migrations` with
 * `migrationsRun: true` (never `synchronize`), so the tables exist before the module starts.
 */
export const RELIABLE_MESSAGING_MIGRATIONS = [
  CreateOutbox1767225600000,
  CreateInbox1767225600001,
  CreateIdempotencyKeys1767225600004,
  CreateClaimCheck1767225600005,
  ScopeIdempotencyKeysByCaller1767225600026,
  CreateScheduled1767225600027,
  CreateSagas1767225600040,
];
