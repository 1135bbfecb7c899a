import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { SAGA_HISTORY_TABLE } from '../database/table-names';
import { SagaInstanceEntity } from './saga-instance.entity';
import type { SagaOutcome } from './saga-store';

/**
 * One message a saga step handled, written in the step's transaction: which message, which step, what it did to
 * the instance and the version it left. Deleted with its instance. The table comes from `CreateSagas1767225600040`.
 */
@Entity({ name: SAGA_HISTORY_TABLE })
@Index('rm_saga_history_saga_idx', ['sagaId', 'id'])
export class SagaHistoryEntity {
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'rm_saga_history_pkey',
  })
  id!: string;

  @Column({ name: 'saga_id', type: 'bigint' })
  sagaId!: string;

  @ManyToOne(() => SagaInstanceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'saga_id', foreignKeyConstraintName: 'rm_saga_history_saga_fkey' })
  instance?: SagaInstanceEntity;

  /** The instance's version after the message: unchanged for an ignored one. */
  @Column({ type: 'integer' })
  version!: number;

  @Column({ name: 'message_id', type: 'text' })
  messageId!: string;

  @Column({ name: 'message_type', type: 'text' })
  messageType!: string;

  /** The step that handled it, `Class.method`. */
  @Column({ type: 'text' })
  step!: string;

  @Column({ type: 'text' })
  outcome!: SagaOutcome;

  @Column({ name: 'handled_at', type: 'timestamptz', default: () => 'now()' })
  handledAt!: Date;
}
