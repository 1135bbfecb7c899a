import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { DataSource, EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { MessageContextStorage } from '../context/message-context.storage';
import { runTransactionStartingWith } from './pipelined-transaction';
import { preparedCommand, type PreparedStatement } from './prepared-query';

type ClsTransactionHost = Pick<TransactionHost, 'isTransactionActive' | 'withTransaction'> & {
  readonly tx: EntityManager;
};
type Propagation = Parameters<TransactionHost['withTransaction']>[0];

/**
 * Finds the transaction the module's database work belongs to. When the app propagates transactions with
 * nestjs-cls' transactional plugin (TypeORM adapter) on the module's DataSource, its `TransactionHost` is used,
 * so `@Transactional()` code and the module share one transaction; otherwise the module works with the
 * DataSource alone. A `@Consume()` handler's transaction (MessageContext.manager) counts as current too.
 */
@Injectable()
export class TransactionContext implements OnModuleInit {
  private readonly logger = new Logger('ReliableMessaging');
  private host?: ClsTransactionHost;
  private propagation?: { required: Propagation; requiresNew: Propagation };
  private lookup?: Promise<void>;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly moduleRef: ModuleRef,
    private readonly contextStorage: MessageContextStorage,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.findHost();
  }

  /** The DataSource holding the outbox and inbox, if one is configured. */
  get dataSource(): DataSource | undefined {
    return this.options.dataSource;
  }

  /** True when transactions propagate through nestjs-cls' TransactionHost. */
  get usesCls(): boolean {
    return this.host !== undefined;
  }

  /**
   * The EntityManager of the transaction the caller runs in: nestjs-cls' active transaction, else the
   * transaction of the message being handled. Undefined outside any transaction.
   */
  async currentManager(): Promise<EntityManager | undefined> {
    await this.findHost();
    if (this.host?.isTransactionActive()) return this.host.tx;
    const manager = this.contextStorage.current()?.manager;
    const runner = manager?.queryRunner;
    return runner && !runner.isReleased && runner.isTransactionActive ? manager : undefined;
  }

  /** Runs `work` in a transaction of its own, which nestjs-cls code called from `work` joins. */
  async runInNewTransaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    await this.findHost();
    const host = this.host;
    if (host && this.propagation)
      return host.withTransaction(this.propagation.requiresNew, () => work(host.tx));
    return this.requireDataSource().transaction((manager) => work(manager));
  }

  /**
   * Runs `work` in a transaction of its own, as `runInNewTransaction()`, whose first statement is `first`; `work`
   * gets the number of rows `first` affected too. Without nestjs-cls, BEGIN and `first` go to the database in one round trip and the
   * transaction bypasses TypeORM's per-query bookkeeping (runTransactionStartingWith), for work done once per
   * message.
   */
  async runInNewTransactionStartingWith<T>(
    first: PreparedStatement,
    work: (manager: EntityManager, affected: number) => Promise<T>,
  ): Promise<T> {
    await this.findHost();
    const host = this.host;
    if (host && this.propagation) {
      return host.withTransaction(this.propagation.requiresNew, async () => {
        const manager = host.tx;
        return work(manager, await preparedCommand(manager, first));
      });
    }
    return runTransactionStartingWith(this.requireDataSource(), first, work);
  }

  /**
   * Runs `work` in the caller's nestjs-cls transaction, or in a new one when there is none; without nestjs-cls
   * it just runs `work`, which then needs a transaction of its own (a handler's, or one passed explicitly).
   */
  async runInCurrentOrNewTransaction<T>(work: () => Promise<T>): Promise<T> {
    await this.findHost();
    if (this.host && this.propagation) return this.host.withTransaction(this.propagation.required, work);
    return work();
  }

  private requireDataSource(): DataSource {
    const dataSource = this.options.dataSource;
    if (!dataSource) throw new Error('the outbox and inbox need the module option dataSource');
    return dataSource;
  }

  private findHost(): Promise<void> {
    this.lookup ??= this.lookUpHost();
    return this.lookup;
  }

  private async lookUpHost(): Promise<void> {
    const dataSource = this.options.dataSource;
    if (!dataSource) return;
    let transactional: typeof import('@nestjs-cls/transactional');
    try {
      // NOTE: imported on demand, not at the top: the package is optional for apps, and under Jest on Node 20
      // it cannot load at all (it require()s the ESM-only @nestjs/common), which must not break the module.
      transactional = await import('@nestjs-cls/transactional');
    } catch {
      return;
    }
    let host: ClsTransactionHost;
    try {
      host = this.moduleRef.get<unknown, ClsTransactionHost>(transactional.TransactionHost, {
        strict: false,
      });
    } catch {
      return;
    }
    if (host.tx?.connection !== dataSource) {
      this.logger.warn(
        "nestjs-cls' TransactionHost manages another DataSource than the module's dataSource option; " +
          'the outbox and inbox open their own transactions on the module DataSource instead',
      );
      return;
    }
    this.host = host;
    this.propagation = {
      required: transactional.Propagation.Required,
      requiresNew: transactional.Propagation.RequiresNew,
    };
  }
}
