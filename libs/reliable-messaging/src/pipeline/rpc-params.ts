import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';

// NOTE: these mirror `@nestjs/microservices` (its constants, `enums/rpc-paramtype.enum` and
// `factories/rpc-params-factory`, the same in Nest 11 and 12) so that the core reads `@Payload()` and `@Ctx()`
// without loading that package, an optional peer: it is loaded only by the `/microservices` entry point.

/** Where `@Payload()` and `@Ctx()` record their parameters: `@nestjs/microservices`' PARAM_ARGS_METADATA. */
export const RPC_PARAM_ARGS_METADATA = ROUTE_ARGS_METADATA;

/** The parameter types `@Payload()` and `@Ctx()` record (`@nestjs/microservices`' RpcParamtype). */
export const RpcParamtype = { PAYLOAD: 3, CONTEXT: 6 } as const;

/** What Nest's RpcParamsFactory does: `@Payload(property?)` reads the payload, `@Ctx()` the context. */
export class RpcParamsFactory {
  exchangeKeyForValue(type: number, data: string | undefined, args: unknown[] | undefined): unknown {
    if (!args) return null;
    switch (type) {
      case RpcParamtype.PAYLOAD:
        return data ? (args[0] as Record<string, unknown> | undefined)?.[data] : args[0];
      case RpcParamtype.CONTEXT:
        return args[1];
      default:
        return null;
    }
  }
}
