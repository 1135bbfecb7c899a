import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BadRequestException,
  Catch,
  Injectable,
  ParseIntPipe,
  UseFilters,
  UseGuards,
  UseInterceptors,
  type ArgumentsHost,
  type CallHandler,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { IsOptional, IsString } from 'class-validator';
import { tap, throwError, type Observable } from 'rxjs';
import { Consume, type MessageContext, MessageType } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'parcel.weighed', idempotencyKey: (m: ParcelWeighed) => `parcel:${m.id}` })
class ParcelWeighed {
  @IsString() id!: string;
  @IsString() grams!: string;
  @IsOptional() @IsString() region?: string;
}

/** Thrown by the handler for a parcel the filter knows how to settle. */
class ParcelLostError extends Error {}

const QUEUE = uniqueQueue('enhancers');
const POSITIONAL_QUEUE = uniqueQueue('enhancers-positional');
const SWALLOWED_QUEUE = uniqueQueue('enhancers-swallowed');
const MAX_ATTEMPTS = 3;

/** What the enhancers saw, in order. */
const seen: string[] = [];

@Injectable()
class RegionGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const parcel = context.switchToRpc().getData<ParcelWeighed>();
    seen.push(`guard:${context.getType()}:${parcel.id}`);
    return parcel.region !== 'blocked';
  }
}

@Injectable()
class TraceInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const { queue } = context.switchToRpc().getContext<MessageContext>();
    const { id } = context.switchToRpc().getData<ParcelWeighed>();
    seen.push(`before:${queue === QUEUE ? 'queue' : queue}:${id}`);
    return next.handle().pipe(tap(() => seen.push(`after:${id}`)));
  }
}

/** Settles a lost parcel (returns a value); rethrows everything else. */
@Catch()
class ParcelFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): unknown {
    seen.push(`filter:${host.getType()}:${(exception as Error).constructor.name}`);
    if (exception instanceof ParcelLostError) return 'settled by the filter';
    throw exception;
  }
}

@Injectable()
@UseGuards(RegionGuard)
@UseInterceptors(TraceInterceptor)
class ParcelHandler {
  readonly handled: Array<{ id: string; grams: number; attempt: number; queue: string }> = [];
  readonly attempts = new Map<string, number>();

  @Consume({ queue: QUEUE, retry: { maxAttempts: MAX_ATTEMPTS, initialDelayMs: 100, maxDelayMs: 200 } })
  @UseFilters(new ParcelFilter())
  async onWeighed(
    @Payload('grams', ParseIntPipe) grams: number,
    @Payload() parcel: ParcelWeighed,
    @Ctx() ctx: MessageContext,
  ): Promise<void> {
    this.attempts.set(parcel.id, ctx.attempt);
    if (parcel.id.startsWith('lost')) throw new ParcelLostError('the parcel is lost');
    if (parcel.id.startsWith('broken')) throw new Error('the scale is offline');
    // An HTTP 4xx exception from the handler itself is the handler's failure, not a refusal: it is retried.
    if (parcel.id.startsWith('handler-400')) throw new BadRequestException('the handler refuses');
    this.handled.push({ id: parcel.id, grams, attempt: ctx.attempt, queue: ctx.queue });
  }
}

/** Logs and returns nothing, through a promise: it handles nothing. */
@Catch()
class LoggingFilter implements ExceptionFilter {
  async catch(exception: unknown): Promise<void> {
    seen.push(`logged:${(exception as Error).message}`);
    await Promise.resolve();
  }
}

/** Answers as `BaseRpcExceptionFilter` does: an Observable that errors. */
@Catch()
class RpcStyleFilter implements ExceptionFilter {
  catch(exception: unknown): Observable<never> {
    return throwError(() => ({ status: 'error', message: (exception as Error).message }));
  }
}

@Injectable()
class FilteredHandler {
  readonly attempts: string[] = [];

  @Consume({ queue: SWALLOWED_QUEUE, retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 } })
  @UseFilters(new LoggingFilter())
  async onLogged(parcel: ParcelWeighed, ctx: MessageContext): Promise<void> {
    this.attempts.push(`${parcel.id}:${ctx.attempt}`);
    throw new Error(`the audit of ${parcel.id} failed`);
  }

  @Consume({
    queue: `${SWALLOWED_QUEUE}-rpc`,
    retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 },
  })
  @UseFilters(new RpcStyleFilter())
  async onRpcStyle(parcel: ParcelWeighed, ctx: MessageContext): Promise<void> {
    this.attempts.push(`rpc:${parcel.id}:${ctx.attempt}`);
    throw new Error(`the rpc audit of ${parcel.id} failed`);
  }
}

@Injectable()
class PositionalHandler {
  readonly handled: Array<{ id: string; queue: string }> = [];

  @Consume({ queue: POSITIONAL_QUEUE })
  async onWeighed(parcel: ParcelWeighed, ctx: MessageContext): Promise<void> {
    this.handled.push({ id: parcel.id, queue: ctx.queue });
  }
}

function parcel(id: string, grams: string, region?: string): ParcelWeighed {
  return Object.assign(new ParcelWeighed(), { id, grams, region });
}

describe("Nest's guards, interceptors, pipes and filters on a @Consume() handler, in the rmq context", () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: ParcelHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ParcelHandler, PositionalHandler, FilteredHandler],
    });
    handler = app.get(ParcelHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  /** The dead letter of parcel `id`, once it is in the dead-letter queue. */
  async function deadLetterOf(id: string, queue = QUEUE): Promise<Record<string, unknown>> {
    let headers: Record<string, unknown> | undefined;
    await waitFor(`the dead letter of ${id} in ${queue}.dlq`, async () => {
      const all = await broker.getAll(`${queue}.dlq`);
      const found = all.find((m) => (JSON.parse(m.content.toString()) as ParcelWeighed).id === id);
      headers = found?.properties.headers;
      return found !== undefined;
    });
    return headers!;
  }

  it('hands @Payload() with its pipe and @Ctx() to the handler, after the guard and inside the interceptor', async () => {
    await app.publisher.publish(parcel('ok-1', '1250'));
    await waitFor('ok-1 handled', () => handler.handled.some((h) => h.id === 'ok-1'));

    expect(handler.handled.find((h) => h.id === 'ok-1')).toEqual({
      id: 'ok-1',
      grams: 1250,
      attempt: 1,
      queue: QUEUE,
    });
    await waitFor('the interceptor to finish', () => seen.includes('after:ok-1'));
    expect(seen.filter((s) => s.endsWith(':ok-1'))).toEqual([
      'guard:rmq:ok-1',
      'before:queue:ok-1',
      'after:ok-1',
    ]);
  });

  it('dead-letters a message the guard refuses at once, with the reason guard-refused', async () => {
    await app.publisher.publish(parcel('blocked-1', '10', 'blocked'));
    const headers = await deadLetterOf('blocked-1');

    expect(headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'guard-refused',
      [DEAD_LETTER_HEADERS.errorClass]: 'MessageRefusedError',
      [DEAD_LETTER_HEADERS.attempts]: 1,
    });
    expect(handler.attempts.has('blocked-1')).toBe(false);
  });

  it("dead-letters a message a pipe refuses at once, with the pipe's message", async () => {
    await app.publisher.publish(parcel('heavy-1', 'very heavy'));
    const headers = await deadLetterOf('heavy-1');

    expect(headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'refused-before-handler',
      [DEAD_LETTER_HEADERS.attempts]: 1,
    });
    expect(String(headers[DEAD_LETTER_HEADERS.errorMessage])).toContain(
      'BadRequestException (400) before the handler ran: Validation failed (numeric string is expected)',
    );
    expect(handler.attempts.has('heavy-1')).toBe(false);
  });

  it('acknowledges a message whose error a filter handled, and retries one whose error it rethrew', async () => {
    await app.publisher.publish(parcel('lost-1', '5'));
    await app.publisher.publish(parcel('broken-1', '5'));
    const headers = await deadLetterOf('broken-1');

    expect(headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: MAX_ATTEMPTS,
      [DEAD_LETTER_HEADERS.errorMessage]: 'the scale is offline',
    });
    expect(seen).toContain('filter:rmq:ParcelLostError');
    const deadLetters = await broker.getAll(`${QUEUE}.dlq`);
    expect(deadLetters.map((m) => (JSON.parse(m.content.toString()) as ParcelWeighed).id)).not.toContain(
      'lost-1',
    );
    expect(handler.attempts.get('lost-1')).toBe(1);
  });

  it('retries an HTTP 4xx exception the handler itself throws: only a refusal before the handler is final', async () => {
    await app.publisher.publish(parcel('handler-400-1', '5'));
    const headers = await deadLetterOf('handler-400-1');

    expect(headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: MAX_ATTEMPTS,
    });
    expect(handler.attempts.get('handler-400-1')).toBe(MAX_ATTEMPTS);
  });

  it('retries a failure whose filter returned nothing through a promise, or an Observable that errors: neither handled it', async () => {
    await app.publisher.publish(parcel('audit-1', '5'));
    const logged = await deadLetterOf('audit-1', SWALLOWED_QUEUE);
    const rpcStyle = await deadLetterOf('audit-1', `${SWALLOWED_QUEUE}-rpc`);

    expect(logged).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: 2,
      [DEAD_LETTER_HEADERS.errorMessage]: 'the audit of audit-1 failed',
    });
    expect(rpcStyle).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: 2,
    });
    expect(seen).toContain('logged:the audit of audit-1 failed');
    const filtered = app.get(FilteredHandler).attempts;
    expect(filtered.filter((a) => a.startsWith('audit-1:'))).toEqual(['audit-1:1', 'audit-1:2']);
    expect(filtered.filter((a) => a.startsWith('rpc:audit-1:'))).toEqual(['rpc:audit-1:1', 'rpc:audit-1:2']);
  });

  it('keeps calling a handler without parameter decorators with (payload, context) by position', async () => {
    const positional = app.get(PositionalHandler);
    await app.publisher.publish(parcel('plain-1', '7'));
    await waitFor('plain-1 handled', () => positional.handled.some((h) => h.id === 'plain-1'));

    expect(positional.handled.find((h) => h.id === 'plain-1')).toEqual({
      id: 'plain-1',
      queue: POSITIONAL_QUEUE,
    });
  });
});
