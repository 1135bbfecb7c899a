import { Check, Column, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { SAGA_TABLE } from '../database/table-names';
import type { SagaStatus } from './saga-store';

/**
 * One saga instance: its saga's name and correlation key (unique together, so two concurrent starts cannot both
 * insert), its state as plain JSON, and the version every step's write checks and moves on by one. A completed
 * instance keeps its row until pruned. The table comes from `CreateSagas1767225600040`, never from `synchronize`.
 */
@Entity({ name: SAGA_TABLE })
@Unique('rm_saga_instance_key', ['saga', 'correlationKey'])
@Check('rm_saga_status_check', `"status" IN ('active', 'completed')`)
@Check('rm_saga_version_check', `"version" > 0`)
@Index('rm_saga_completed_at_idx', ['completedAt'], { where: '"completed_at" IS NOT NULL' })
export class SagaInstanceEntity {
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'rm_saga_pkey',
  })
  id!: string;

  /** The saga's name (`@Saga({ name })`). */
  @Column({ type: 'text' })
  saga!: string;

  @Column({ name: 'correlation_key', type: 'text' })
  correlationKey!: string;

  @Column({ type: 'text' })
  status!: SagaStatus;

  @Column({ type: 'jsonb' })
  state!: object;

  /** 1 when started, one more per step. */
  @Column({ type: 'integer' })
  version!: number;

  /**
   * The instance's pending timeouts (the scheduled messages its steps asked for, `SagaTimeout`), so that completion
   * can cancel them.
   */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  timeouts!: unknown[];

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;
}
