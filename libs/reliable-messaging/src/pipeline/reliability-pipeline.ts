import { Inject, Injectable } from '@nestjs/common';
import { ExternalContextCreator } from '@nestjs/core';
import { RMQ_CONTEXT_TYPE } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { MessageContextStorage } from '../context/message-context.storage';
import { FailureHandler } from '../retry/failure-handler.service';
import { compose, type MessageHandler, type MessageMiddleware } from './message-middleware';
import { settleMiddleware } from './settle.middleware';
import { decodeMiddleware } from './decode.middleware';
import { invokeHandler, type NestHandler } from './invoke-handler';

/**
 * Builds each consumer's fixed reliability chain once, at startup. The order, outermost first:
 *
 * 1. settle: ack after success; on failure, retry or dead-letter (never both, never neither)
 * 2. decode: envelope, limits, safe JSON, schema version, validation
 * 3. the handler, through Nest's guards, interceptors and pipes
 *
 * Users cannot opt out of a stage; application concerns belong in Nest interceptors on the handler.
 */
@Injectable()
export class ReliabilityPipeline {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly failures: FailureHandler,
    private readonly contextStorage: MessageContextStorage,
    private readonly externalContextCreator: ExternalContextCreator,
  ) {}

  build(consumer: ConsumerDefinition): MessageHandler {
    const stages: MessageMiddleware[] = [
      settleMiddleware(this.failures),
      decodeMiddleware(consumer, this.options.maxPayloadBytes),
    ];
    return compose(stages, invokeHandler(this.nestHandler(consumer), this.contextStorage));
  }

  private nestHandler(consumer: ConsumerDefinition): NestHandler {
    const instance = consumer.instance as Record<string, (...args: unknown[]) => unknown>;
    return this.externalContextCreator.create(
      instance,
      instance[consumer.methodName],
      consumer.methodName,
      undefined,
      undefined,
      undefined,
      undefined,
      { guards: true, interceptors: true, filters: false },
      RMQ_CONTEXT_TYPE,
    );
  }
}
