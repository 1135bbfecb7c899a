import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  CONSUME_METADATA,
  PUBLISH_METADATA,
  SAGA_METADATA,
  SAGA_STEP_METADATA,
} from '../reliable-messaging.constants';
import type { SagaOptions, SagaStepDeclaration } from '../options/saga.options';
import { RPC_PARAM_ARGS_METADATA, RpcParamtype } from '../pipeline/rpc-params';
import type { ConsumeOptions } from '../options/consume.options';
import type { PublishDecoratorOptions } from '../decorators/publish.decorator';

/** Reads what the module's decorators wrote on a method; the one place that knows their metadata keys. */
@Injectable()
export class MessagingMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The options of `@Consume()` on `method`, or undefined when it has none. */
  consumeOptions(method: object): ConsumeOptions | undefined {
    return this.reflector.get<ConsumeOptions | undefined>(CONSUME_METADATA, method as () => unknown);
  }

  /** The options of `@Publish()` on `method`, or undefined when it has none. */
  publishOptions(method: object): PublishDecoratorOptions | undefined {
    return this.reflector.get<PublishDecoratorOptions | undefined>(PUBLISH_METADATA, method as () => unknown);
  }

  /** The options of `@Saga()` on `target` (a class), or undefined when it has none. */
  sagaOptions(target: object): SagaOptions | undefined {
    return this.reflector.get<SagaOptions | undefined>(SAGA_METADATA, target as () => unknown);
  }

  /** The message class and options of `@SagaStep()` on `method`, or undefined when it has none. */
  sagaStep(method: object): SagaStepDeclaration | undefined {
    return this.reflector.get<SagaStepDeclaration | undefined>(SAGA_STEP_METADATA, method as () => unknown);
  }

  /**
   * The declared type of the parameter that receives the whole payload (TypeScript's emitted
   * `design:paramtypes`): the one with `@Payload()` and no property, or the first parameter of a method without
   * parameter decorators. Undefined when parameter decorators take only parts of the payload.
   */
  payloadParameterType(prototype: object, methodName: string): unknown {
    const types = Reflect.getMetadata('design:paramtypes', prototype, methodName) as unknown[] | undefined;
    const params = Reflect.getMetadata(RPC_PARAM_ARGS_METADATA, prototype.constructor, methodName) as
      Record<string, { index: number; data?: unknown }> | undefined;
    if (!params) return types?.[0];
    const whole = Object.entries(params).find(
      ([key, param]) => key.startsWith(`${RpcParamtype.PAYLOAD}:`) && param.data === undefined,
    );
    return whole ? types?.[whole[1].index] : undefined;
  }
}
