import { HttpException, HttpStatus } from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA } from '@nestjs/common/constants.js';
import type { ExternalContextCreator } from '@nestjs/core';
import type { ParamsFactory } from '@nestjs/core/helpers/external-context-creator.js';
import { FORBIDDEN_MESSAGE } from '@nestjs/core/guards/constants.js';
import { PARAM_ARGS_METADATA } from '@nestjs/microservices/constants.js';
import { RpcParamsFactory } from '@nestjs/microservices/factories/rpc-params-factory.js';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageContextStorage } from '../context/message-context.storage';
import { MessageRefusedError } from '../errors/message-refused.error';
import { DeliveryContext } from './delivery-context';

/** A handler wrapped by Nest with its guards, interceptors, pipes and filters: called with (payload, context). */
export type NestHandler = (...args: unknown[]) => Promise<unknown>;

type Method = (...args: unknown[]) => unknown;

/** The 4xx statuses that say "not now" rather than "never": a message refused with one is retried. */
const RETRYABLE_CLIENT_STATUSES = new Set<number>([HttpStatus.REQUEST_TIMEOUT, HttpStatus.TOO_MANY_REQUESTS]);

/**
 * Wraps a consumer's method the way Nest wraps a microservice handler, in the `rmq` context: guards, then
 * interceptors, then pipes on the parameters, then the method. Parameters take `@Payload()` (optionally a
 * property) and `@Ctx()` from `@nestjs/microservices`, with their pipes; a method without them gets
 * `(payload, context)` by position. Exception filters run when the method or its class declares one
 * (`@UseFilters()`); a filter that returns a value handles the error (the message is acknowledged), one that
 * throws hands its error to the retry policy.
 *
 * NOTE: Nest calls `callback` only after the guards, interceptors and pipes have let the message through, so
 * the stand-in below marks the attempt's context when the method is entered: an error thrown before that is a
 * refusal of the message (see `refusalOf`).
 */
export function createNestHandler(
  plan: ConsumerPlan,
  contextCreator: ExternalContextCreator,
  storage: MessageContextStorage,
): NestHandler {
  const instance = plan.instance as Record<string, Method>;
  const method = instance[plan.methodName];
  const entered = function (this: unknown, ...args: unknown[]): unknown {
    const context = storage.current();
    if (context instanceof DeliveryContext) context.handlerEntered = true;
    return method.apply(this, args);
  };
  // Guards, interceptors, pipes and filters are read from the function Nest is handed: the stand-in carries
  // the method's own metadata.
  for (const key of Reflect.getOwnMetadataKeys(method)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, method), entered);
  }
  const filters =
    Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, method) !== undefined ||
    Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, instance.constructor) !== undefined;
  return withModule(contextCreator, plan.moduleKey).create(
    instance,
    entered,
    plan.methodName,
    PARAM_ARGS_METADATA,
    // NOTE: the microservices' own factory; its declared `data` type is narrower than the interface's.
    new RpcParamsFactory() as ParamsFactory,
    undefined,
    undefined,
    { guards: true, interceptors: true, filters },
    plan.contextType,
  );
}

/**
 * The context creator, told which module holds the handler's instance. Nest's creator finds the module of a
 * provider on its own but not that of a controller (it looks among providers), and without the module a
 * controller's class-based guards, interceptors and pipes resolve to nothing, silently: an `@EventPattern()`
 * handler lives in a controller.
 */
function withModule(
  contextCreator: ExternalContextCreator,
  moduleKey: string | undefined,
): ExternalContextCreator {
  if (moduleKey === undefined) return contextCreator;
  const located = Object.create(contextCreator) as ExternalContextCreator;
  located.getContextModuleKey = () => moduleKey;
  return located;
}

/**
 * What an error thrown before the handler was entered means: a guard that returned false, or an HTTP 4xx
 * exception from a guard, an interceptor or a pipe (other than 408 and 429), refuses the message for good;
 * anything else is left to the retry policy as it is.
 */
export function refusalOf(error: unknown): unknown {
  if (!(error instanceof HttpException)) return error;
  const status = error.getStatus();
  if (status === Number(HttpStatus.FORBIDDEN) && error.message === FORBIDDEN_MESSAGE) {
    return new MessageRefusedError('guard-refused', 'a guard of the handler refused the message', {
      cause: error,
    });
  }
  if (status < 400 || status >= 500 || RETRYABLE_CLIENT_STATUSES.has(status)) return error;
  return new MessageRefusedError(
    'refused-before-handler',
    `${error.name} (${status}) before the handler ran: ${describeResponse(error)}`,
    { cause: error },
  );
}

/** The detail of an HttpException: ValidationPipe puts its messages in the response's `message`. */
function describeResponse(error: HttpException): string {
  const response = error.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  return typeof message === 'string' ? message : error.message;
}
