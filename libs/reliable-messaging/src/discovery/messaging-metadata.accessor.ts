import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { CONSUME_METADATA, PUBLISH_METADATA } from '../reliable-messaging.constants';
import type { ConsumeOptions } from '../decorators/consume.decorator';
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

  /** The declared type of a method's first parameter (TypeScript's emitted `design:paramtypes`), if any. */
  firstParameterType(prototype: object, methodName: string): unknown {
    const types = Reflect.getMetadata('design:paramtypes', prototype, methodName) as unknown[] | undefined;
    return types?.[0];
  }
}
