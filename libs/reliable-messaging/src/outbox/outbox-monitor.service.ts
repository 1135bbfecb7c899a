import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import { OutboxStore, type OutboxBacklog, type ParkedRow } from './outbox-store.service';

const DEFAULT_PARKED_LIMIT = 100;

/**
 * What the outbox holds, for health checks, metrics and operators: the backlog of unpublished rows and its
 * age, and the parked rows (which can be put back once their cause is fixed, e.g. a queue bound for an
 * unroutable type). Needs the `dataSource` option.
 */
@Injectable()
export class OutboxMonitor {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: OutboxStore,
  ) {}

  /** Pending rows, the age in seconds of the oldest one, and parked rows. One query. */
  async backlog(): Promise<OutboxBacklog> {
    this.requireOutbox();
    return this.store.backlog();
  }

  /** Parked rows with their reasons, oldest first. Default limit: 100. */
  async parked(limit = DEFAULT_PARKED_LIMIT): Promise<ParkedRow[]> {
    this.requireOutbox();
    return this.store.parked(limit);
  }

  /** Puts parked rows back in the queue for the relay; resolves with how many were parked and moved. */
  async retryParked(ids: readonly string[]): Promise<number> {
    this.requireOutbox();
    return this.store.retryParked(ids);
  }

  private requireOutbox(): void {
    if (!this.options.dataSource) {
      throw new ConfigurationError('ReliableMessaging: there is no outbox without the dataSource option');
    }
  }
}
