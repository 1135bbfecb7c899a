import { HttpException, HttpStatus } from '@nestjs/common';
import { isObservable, lastValueFrom } from 'rxjs';
import {
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
} from '@nestjs/common/constants.js';
import type { ApplicationConfig } from '@nestjs/core';
import type { ExternalContextCreator } from '@nestjs/core';
import type { ParamsFactory } from '@nestjs/core/helpers/external-context-creator.js';
import { FORBIDDEN_MESSAGE } from '@nestjs/core/guards/constants.js';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageContextStorage } from '../context/message-context.storage';
import { MessageRefusedError } from '../errors/message-refused.error';
import { DeliveryContext } from './delivery-context';
import { RPC_PARAM_ARGS_METADATA, RpcParamsFactory } from './rpc-params';

/** A handler wrapped by Nest with its guards, interceptors, pipes and filters: called with (payload, context). */
export type NestHandler = (...args: unknown[]) => Promise<unknown>;

type Method = (...args: unknown[]) => unknown;

/**
 * The statuses that refuse the message itself, for good: a validation pipe's 400 and 422. Any other exception
 * before the handler (a 404 from a pipe that loads an entity not there yet, a 409 from a lock, a 401 from an
 * expired token) is left to the retry policy.
 */
const REFUSING_STATUSES = new Set<number>([HttpStatus.BAD_REQUEST, HttpStatus.UNPROCESSABLE_ENTITY]);

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
    if (!(context instanceof DeliveryContext)) return method.apply(this, args);
    context.handlerEntered = true;
    const result = method.apply(this, args);
    if (!(result instanceof Promise)) {
      context.handlerOutcome = { failed: false };
      return result;
    }
    return result.then(
      (value: unknown) => {
        context.handlerOutcome = { failed: false };
        return value;
      },
      (error: unknown) => {
        context.handlerOutcome = { failed: true, error };
        throw error;
      },
    );
  };
  // Interceptors that log or trace by `context.getHandler().name` see the method's own name.
  Object.defineProperty(entered, 'name', { value: method.name });
  // Guards, interceptors, pipes and filters are read from the function Nest is handed: the stand-in carries
  // the method's own metadata.
  for (const key of Reflect.getOwnMetadataKeys(method)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, method), entered);
  }
  const filters =
    Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, method) !== undefined ||
    Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, instance.constructor) !== undefined;
  if (!filters && !hasNestEnhancers(contextCreator, instance, plan.methodName, method)) {
    return callDirectly(instance, entered);
  }
  const handler: NestHandler = withModule(contextCreator, plan.moduleKey).create(
    instance,
    entered,
    plan.methodName,
    RPC_PARAM_ARGS_METADATA,
    // NOTE: a copy of the microservices' own factory (see rpc-params); its `data` type is narrower than the interface's.
    new RpcParamsFactory() as ParamsFactory,
    undefined,
    undefined,
    { guards: true, interceptors: true, filters },
    plan.contextType,
  );
  return filters ? settleFilterOutcome(handler, storage) : handler;
}

/**
 * Whether Nest has anything to run around the method: parameter decorators (and so pipes), or guards or
 * interceptors on the method, its class or the whole app (`useGlobal*()`, `APP_GUARD`, `APP_INTERCEPTOR`).
 * Without any, Nest's wrapper would only call the method, at the price of five promises per message.
 *
 * NOTE: the app-wide ones are read from the ApplicationConfig Nest gives its own context creator; should it be
 * out of reach, the answer is yes, and Nest's wrapper runs.
 */
function hasNestEnhancers(
  contextCreator: ExternalContextCreator,
  instance: Record<string, Method>,
  methodName: string,
  method: Method,
): boolean {
  const params = Reflect.getMetadata(RPC_PARAM_ARGS_METADATA, instance.constructor, methodName) as
    object | undefined;
  if (params !== undefined && Object.keys(params).length > 0) return true;
  for (const key of [GUARDS_METADATA, INTERCEPTORS_METADATA]) {
    const local = [
      Reflect.getMetadata(key, method),
      Reflect.getMetadata(key, instance.constructor),
    ] as unknown[];
    if (local.some((list) => Array.isArray(list) && list.length > 0)) return true;
  }
  const config = (contextCreator as unknown as { container?: { applicationConfig?: ApplicationConfig } })
    .container?.applicationConfig;
  if (!config) return true;
  return (
    config.getGlobalGuards().length > 0 ||
    config.getGlobalRequestGuards().length > 0 ||
    config.getGlobalInterceptors().length > 0 ||
    config.getGlobalRequestInterceptors().length > 0
  );
}

/**
 * The method called as Nest's wrapper calls it when it has nothing to run around it: with `(payload, context)`,
 * a synchronous throw turned into a rejection, and an Observable it returns awaited to its last value.
 */
function callDirectly(instance: object, entered: Method): NestHandler {
  return (...args: unknown[]) => {
    try {
      const result = entered.apply(instance, args);
      if (result instanceof Promise) return result;
      return isObservable(result) ? lastValueFrom(result) : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * With an exception filter, what the wrapped handler resolves to after a failure is the filter's return value,
 * and only a value means the filter handled the failure. An Observable (what `BaseRpcExceptionFilter` returns)
 * is awaited and its error rethrown; a filter that returned nothing, at once or through a promise, handled
 * nothing: the handler's own error is rethrown, or, when the failure came before the handler and the filter
 * swallowed it, an error that says so, so the message is retried rather than acknowledged.
 */
function settleFilterOutcome(handler: NestHandler, storage: MessageContextStorage): NestHandler {
  return async (...args: unknown[]) => {
    const returned = await handler(...args);
    const value = isObservable(returned)
      ? await lastValueFrom(returned, { defaultValue: undefined })
      : returned;
    const context = storage.current();
    if (!(context instanceof DeliveryContext) || value !== undefined) return value;
    const outcome = context.handlerOutcome;
    if (outcome?.failed) throw outcome.error;
    if (outcome === undefined && context.handlerEntered === false) {
      // Either an interceptor answered without calling the handler, or a filter swallowed a guard's, an
      // interceptor's or a pipe's error: only a value tells them apart, and neither gave one.
      throw new Error(
        'the handler did not run and nothing answered for it: an exception filter returned nothing for a failure before the handler (return a value to acknowledge)',
      );
    }
    return value;
  };
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
 * What an error thrown before the handler was entered means: a guard that returned false, or a 400 or 422 from
 * a guard, an interceptor or a pipe (a validation error), refuses the message for good; anything else is left to
 * the retry policy as it is.
 */
export function refusalOf(error: unknown): unknown {
  if (!(error instanceof HttpException)) return error;
  const status = error.getStatus();
  if (status === Number(HttpStatus.FORBIDDEN) && error.message === FORBIDDEN_MESSAGE) {
    return new MessageRefusedError('guard-refused', 'a guard of the handler refused the message', {
      cause: error,
    });
  }
  if (!REFUSING_STATUSES.has(status)) return error;
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
