import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import { SAGA_METADATA } from '../reliable-messaging.constants';
import type { SagaOptions } from '../options/saga.options';

/**
 * Declares a saga: a provider whose `@SagaStep()` methods start, continue and complete instances kept in the
 * module's database (table `rm_saga`), each found by the correlation key its message carries. Makes the class
 * injectable; list it among the module's providers as any other.
 *
 * @example
 * ＠Saga({ name: 'order-fulfilment' })
 * export class OrderFulfilment { ... }
 */
export const Saga = (options: SagaOptions): ClassDecorator =>
  applyDecorators(Injectable(), SetMetadata(SAGA_METADATA, options));
