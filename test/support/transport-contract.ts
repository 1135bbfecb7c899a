import { expect } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, GetMessage, Options } from 'amqplib';
import { IsInt, IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  Consume,
  HEADERS,
  type MessageContext,
  MessagePublisher,
  MessageType,
  NonRetryableError,
  ReliableMessagingModule,
} from 'nestjs-reliable-messaging';
import {
  DELAY_RESOLUTION_MS,
  deliverExchangeName,
  delayLevelNames,
  DEAD_LETTER_HEADERS,
} from 'nestjs-reliable-messaging/operations';
import type { Transport } from './contract-transports';
import { waitFor } from './wait-for';

/**
 * The transport contract: the broker behaviour the module relies on, written once and run on every transport
 * (Watermill's `pubsub/tests`, Rebus' `Tests.Contracts`). Each case asserts what RabbitMQ 3.10 does, found by
 * running it there first; the in-memory broker must do the same. Only what the module uses is asserted.
 */
export interface ContractCase {
  readonly scenario: string;
  run(t: ContractContext): Promise<void>;
}

/** A channel with what the broker said when it closed it. */
export interface WatchedChannel<C extends Channel = Channel> {
  readonly channel: C;
  readonly errors: Array<Error & { code?: number }>;
  /** True once the channel emitted `close`. */
  closed(): boolean;
}

/** What a case gets: the transport, names unique to the case, channels that record their errors, waiting. */
export class ContractContext {
  private readonly names = new Set<string>();

  constructor(
    readonly transport: Transport,
    readonly connection: ChannelModel,
    private readonly prefix: string,
  ) {}

  /** A queue or exchange name unique to this case and run, deleted by {@link cleanUp}. */
  name(suffix: string): string {
    const name = `${this.prefix}.${suffix}`;
    this.names.add(name);
    return name;
  }

  async channel(): Promise<WatchedChannel> {
    return watch(await this.connection.createChannel());
  }

  async confirmChannel(): Promise<WatchedChannel<ConfirmChannel>> {
    return watch(await this.connection.createConfirmChannel());
  }

  /** Polls `predicate` at the transport's pace until it holds (10 s at most). */
  until(what: string | (() => string), predicate: () => boolean | Promise<boolean>): Promise<void> {
    return waitFor(what, predicate, { timeoutMs: 10_000, intervalMs: this.transport.pollIntervalMs });
  }

  /** Takes (with noAck) every message `queue` holds now, oldest first. */
  async drain(channel: Channel, queue: string): Promise<GetMessage[]> {
    const taken: GetMessage[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return taken;
      taken.push(message);
    }
  }

  /** Waits until `count` messages have been taken from `queue`, and returns them. */
  async take(channel: Channel, queue: string, count: number): Promise<GetMessage[]> {
    const taken: GetMessage[] = [];
    await this.until(
      () => `${count} message(s) on ${queue} (got ${taken.length})`,
      async () => {
        taken.push(...(await this.drain(channel, queue)));
        return taken.length >= count;
      },
    );
    return taken;
  }

  /** Remembers a name declared by someone else (the module under test) for {@link cleanUp}. */
  track(name: string): void {
    this.names.add(name);
  }

  /** Deletes every queue and exchange this case named. */
  async cleanUp(): Promise<void> {
    const { channel } = await this.channel();
    for (const name of this.names) {
      await channel.deleteQueue(name);
      await channel.deleteExchange(name);
    }
    await channel.close();
  }
}

function watch<C extends Channel>(channel: C): WatchedChannel<C> {
  const errors: Array<Error & { code?: number }> = [];
  let closed = false;
  channel.on('error', (error: Error) => errors.push(error));
  channel.on('close', () => (closed = true));
  return { channel, errors, closed: () => closed };
}

const bodies = (messages: Array<{ content: Buffer }>) => messages.map((m) => m.content.toString());

/** The text RabbitMQ gave for a channel error, without amqplib's wrapping. */
function brokerText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return /[A-Z_]+ - [^"]*/.exec(text)?.[0] ?? text;
}

/** Publishes on a confirm channel and waits for every confirm. */
async function publishAll(
  channel: ConfirmChannel,
  exchange: string,
  messages: Array<[routingKey: string, body: string, options?: Options.Publish]>,
): Promise<void> {
  for (const [routingKey, body, options] of messages)
    channel.publish(exchange, routingKey, Buffer.from(body), options);
  await channel.waitForConfirms();
}

/** A consumer that records what it got and settles nothing by itself. */
async function recordingConsumer(channel: Channel, queue: string) {
  const received: ConsumeMessage[] = [];
  let cancelled = false;
  const { consumerTag } = await channel.consume(queue, (message) => {
    if (message === null) cancelled = true;
    else received.push(message);
  });
  return { consumerTag, received, cancelled: () => cancelled };
}

/** The arguments the module declares a consumer queue with (topology.service.ts), for a dead-letter exchange. */
function consumerQueueArguments(
  type: 'classic' | 'quorum',
  dlx: string,
  dlq: string,
): Record<string, unknown> {
  const args: Record<string, unknown> = {
    'x-queue-type': type,
    'x-dead-letter-exchange': dlx,
    'x-dead-letter-routing-key': dlq,
  };
  if (type === 'quorum') {
    args['x-delivery-limit'] = 20;
    args['x-dead-letter-strategy'] = 'at-least-once';
    args['x-overflow'] = 'reject-publish';
  }
  return args;
}

/** A queue redeclared with other settings: what RabbitMQ 3.10 compares and what it answers. */
interface Redeclaration {
  what: string;
  first: Options.AssertQueue;
  again: Options.AssertQueue;
  /** The broker's text, `<q>` standing for the queue's name; none: the redeclaration is accepted. */
  refusal?: string;
}

const REDECLARATIONS: Redeclaration[] = [
  {
    what: 'the same arguments',
    first: { arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 20 } },
    again: { arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 20 } },
  },
  {
    what: 'x-delivery-limit on a classic queue (a classic queue does not compare it)',
    first: { arguments: { 'x-queue-type': 'classic' } },
    again: { arguments: { 'x-queue-type': 'classic', 'x-delivery-limit': 5 } },
  },
  {
    what: 'another x-delivery-limit on a quorum queue',
    first: { arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 20 } },
    again: { arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 5 } },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-delivery-limit' for queue '<q>' in vhost '/': received '5' but current is '20'",
  },
  {
    what: 'an argument RabbitMQ does not know',
    first: { arguments: { 'x-queue-type': 'quorum' } },
    again: { arguments: { 'x-queue-type': 'quorum', 'x-custom': 'anything' } },
  },
  {
    what: "x-queue-type 'classic' on a queue declared without a type",
    first: {},
    again: { arguments: { 'x-queue-type': 'classic' } },
  },
  {
    what: 'another queue type',
    first: { arguments: { 'x-queue-type': 'quorum' } },
    again: { arguments: { 'x-queue-type': 'classic' } },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '<q>' in vhost '/': received 'classic' but current is 'quorum'",
  },
  {
    what: 'no type for a quorum queue',
    first: { arguments: { 'x-queue-type': 'quorum' } },
    again: {},
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '<q>' in vhost '/': received none but current is the value 'quorum' of type 'longstr'",
  },
  {
    what: 'the quorum arguments on a classic queue (x-overflow is compared before x-queue-type)',
    first: { arguments: consumerQueueArguments('classic', 'dlx', 'dlq') },
    again: { arguments: consumerQueueArguments('quorum', 'dlx', 'dlq') },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-overflow' for queue '<q>' in vhost '/': received the value 'reject-publish' of type 'longstr' but current is none",
  },
  {
    what: 'another message TTL',
    first: { arguments: { 'x-message-ttl': 1000 } },
    again: { arguments: { 'x-message-ttl': 2000 } },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue '<q>' in vhost '/': received '2000' but current is '1000'",
  },
  {
    what: 'a single-active-consumer flag it did not have',
    first: {},
    again: { arguments: { 'x-single-active-consumer': true } },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue '<q>' in vhost '/': received the value 'true' of type 'bool' but current is none",
  },
  {
    what: 'a durable queue declared transient',
    first: { durable: true },
    again: { durable: false },
    refusal:
      "PRECONDITION_FAILED - inequivalent arg 'durable' for queue '<q>' in vhost '/': received 'false' but current is 'true'",
  },
];

/** The channel-level cases: the broker as the module's channel calls see it. */
export const CHANNEL_CASES: ContractCase[] = [
  {
    scenario: 'a queue declared again is accepted or refused with 406 as RabbitMQ 3.10 compares its settings',
    async run(t) {
      for (const [i, redeclaration] of REDECLARATIONS.entries()) {
        const queue = t.name(`redeclare-${i}`);
        const declaring = await t.channel();
        await declaring.channel.assertQueue(queue, redeclaration.first);
        const again = declaring.channel.assertQueue(queue, redeclaration.again);
        if (redeclaration.refusal === undefined) {
          await expect(again).resolves.toMatchObject({ queue });
          await declaring.channel.close();
          continue;
        }
        const error = await again.then(
          (): Error & { code?: number } => new Error(`${redeclaration.what}: accepted`),
          (refused: unknown) => refused as Error & { code?: number },
        );
        expect({ what: redeclaration.what, code: error.code, text: brokerText(error) }).toEqual({
          what: redeclaration.what,
          code: 406,
          text: redeclaration.refusal.replace('<q>', queue),
        });
        await t.until(`${redeclaration.what}: the channel closes`, () => declaring.closed());
        expect(declaring.errors.map((e) => e.code)).toEqual([406]);
        await expect(declaring.channel.checkQueue(queue)).rejects.toThrow(/closed/i);
      }
    },
  },
  {
    scenario: 'an exchange declared again with another type or durability is refused with 406',
    async run(t) {
      const exchange = t.name('exchange');
      const first = await t.channel();
      await first.channel.assertExchange(exchange, 'topic', { durable: true });
      await first.channel.assertExchange(exchange, 'topic', { durable: true });
      const byType = await first.channel
        .assertExchange(exchange, 'direct', { durable: true })
        .catch((e: Error) => e);
      expect(brokerText(byType)).toBe(
        `PRECONDITION_FAILED - inequivalent arg 'type' for exchange '${exchange}' in vhost '/': received 'direct' but current is 'topic'`,
      );
      await t.until('the channel closes', () => first.closed());

      const second = await t.channel();
      const byDurability = await second.channel
        .assertExchange(exchange, 'topic', { durable: false })
        .catch((e: Error) => e);
      expect(brokerText(byDurability)).toBe(
        `PRECONDITION_FAILED - inequivalent arg 'durable' for exchange '${exchange}' in vhost '/': received 'false' but current is 'true'`,
      );
      await t.until('the channel closes', () => second.closed());
    },
  },
  {
    scenario: 'topic, direct, fanout, headers, exchange-to-exchange and default-exchange routing',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const [topic, direct, fanout, headers, inner] = ['topic', 'direct', 'fanout', 'headers', 'inner'].map(
        (kind) => t.name(`x-${kind}`),
      );
      await channel.assertExchange(topic, 'topic');
      await channel.assertExchange(direct, 'direct');
      await channel.assertExchange(fanout, 'fanout');
      await channel.assertExchange(headers, 'headers');
      await channel.assertExchange(inner, 'topic');
      const q = (suffix: string) => t.name(`q-${suffix}`);
      const queues = ['star', 'hash', 'hash-middle', 'direct', 'fanout1', 'fanout2', 'headers', 'inner'];
      for (const suffix of queues) {
        await channel.assertQueue(q(suffix));
      }
      await channel.bindQueue(q('star'), topic, 'order.*');
      await channel.bindQueue(q('hash'), topic, 'order.#');
      await channel.bindQueue(q('hash-middle'), topic, '*.*.1.#');
      await channel.bindQueue(q('direct'), direct, 'paid');
      await channel.bindQueue(q('fanout1'), fanout, 'ignored');
      await channel.bindQueue(q('fanout2'), fanout, '');
      await channel.bindQueue(q('headers'), headers, '', { 'x-match': 'all', 'rm-retry-queue': 'billing' });
      await channel.bindExchange(inner, topic, '#.eu');
      await channel.bindQueue(q('inner'), inner, '#');

      await publishAll(channel, topic, [
        ['order', 'order'],
        ['order.placed', 'order.placed'],
        ['order.placed.eu', 'order.placed.eu'],
        ['0.0.1', '0.0.1'],
        ['0.0.0.1', '0.0.0.1'],
      ]);
      await publishAll(channel, direct, [
        ['paid', 'paid'],
        ['paid.eu', 'paid.eu'],
      ]);
      await publishAll(channel, fanout, [['anything', 'fanned']]);
      await publishAll(channel, headers, [
        ['x', 'match', { headers: { 'rm-retry-queue': 'billing', other: 1 } }],
        ['x', 'no match', { headers: { 'rm-retry-queue': 'shipping' } }],
      ]);
      await publishAll(channel, '', [[q('direct'), 'by name']]);

      const got: Record<string, string[]> = {};
      for (const suffix of queues) {
        got[suffix] = bodies(await t.drain(channel, q(suffix)));
      }
      expect(got).toEqual({
        star: ['order.placed'],
        hash: ['order', 'order.placed', 'order.placed.eu'],
        'hash-middle': ['0.0.1'],
        direct: ['paid', 'by name'],
        fanout1: ['fanned'],
        fanout2: ['fanned'],
        headers: ['match'],
        inner: ['order.placed.eu'],
      });
    },
  },
  {
    scenario:
      'an exchange that routes a message nowhere hands it to its alternate exchange, also behind an exchange-to-exchange binding (lanes)',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const [events, router, fallback] = ['events', 'router', 'fallback'].map((kind) => t.name(`x-${kind}`));
      await channel.assertExchange(events, 'topic');
      await channel.assertExchange(fallback, 'fanout');
      await channel.assertExchange(router, 'headers', { alternateExchange: fallback });
      const [urgent, bulk] = ['urgent', 'bulk'].map((lane) => t.name(`q-${lane}`));
      await channel.assertQueue(urgent);
      await channel.assertQueue(bulk);
      await channel.bindQueue(urgent, router, '', { 'x-match': 'all', 'rm-lane': 'urgent' });
      await channel.bindQueue(bulk, router, '', { 'x-match': 'all', 'rm-lane': 'bulk' });
      await channel.bindQueue(urgent, fallback, '');
      await channel.bindExchange(router, events, 'receipt.*');

      await publishAll(channel, events, [
        ['receipt.printed', 'bulk', { headers: { 'rm-lane': 'bulk' } }],
        ['receipt.printed', 'urgent', { headers: { 'rm-lane': 'urgent' } }],
        ['receipt.printed', 'no lane'],
        ['receipt.printed', 'unknown lane', { headers: { 'rm-lane': 'other' } }],
        ['order.placed', 'not bound'],
      ]);

      expect({
        urgent: bodies(await t.drain(channel, urgent)),
        bulk: bodies(await t.drain(channel, bulk)),
      }).toEqual({
        urgent: ['urgent', 'no lane', 'unknown lane'],
        bulk: ['bulk'],
      });
    },
  },
  {
    scenario:
      'a confirm channel confirms a routed message, returns an unroutable mandatory one first, and fails a publish to a missing exchange',
    async run(t) {
      const watched = await t.confirmChannel();
      const { channel } = watched;
      const exchange = t.name('confirms');
      const queue = t.name('confirmed');
      await channel.assertExchange(exchange, 'topic');
      await channel.assertQueue(queue);
      await channel.bindQueue(queue, exchange, 'routed');
      const events: string[] = [];
      channel.on(
        'return',
        (message: { fields: { replyCode: number; replyText: string; routingKey: string } }) =>
          events.push(
            `return ${message.fields.replyCode} ${message.fields.replyText} ${message.fields.routingKey}`,
          ),
      );
      const confirmed = (routingKey: string, target = exchange) =>
        new Promise<string>((resolve) =>
          channel.publish(target, routingKey, Buffer.from(routingKey), { mandatory: true }, (error) => {
            events.push(`confirm ${routingKey} ${error ? 'error' : 'ok'}`);
            resolve(error ? 'error' : 'ok');
          }),
        );
      expect(await confirmed('routed')).toBe('ok');
      expect(await confirmed('nowhere')).toBe('ok');
      expect(events).toEqual(['confirm routed ok', 'return 312 NO_ROUTE nowhere', 'confirm nowhere ok']);
      expect((await channel.checkQueue(queue)).messageCount).toBe(1);

      expect(await confirmed('lost', t.name('missing-exchange'))).toBe('error');
      await t.until('the channel closes', () => watched.closed());
      await expect(channel.waitForConfirms()).rejects.toThrow('channel closed');
      expect(watched.errors.map((e) => e.code)).toEqual([404]);
      expect(brokerText(watched.errors[0])).toMatch(
        /^NOT_FOUND - no exchange '.*missing-exchange' in vhost '\/'$/,
      );
    },
  },
  {
    scenario: 'a consumer gets each message once, not redelivered, and the queue empties as it acknowledges',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const queue = t.name('consume');
      await channel.assertQueue(queue);
      await publishAll(channel, '', [
        [queue, 'a'],
        [queue, 'b'],
      ]);
      const consumer = await recordingConsumer(channel, queue);
      await t.until('two deliveries', () => consumer.received.length === 2);
      expect(
        consumer.received.map((m) => [m.content.toString(), m.fields.redelivered, m.fields.routingKey]),
      ).toEqual([
        ['a', false, queue],
        ['b', false, queue],
      ]);
      expect(await channel.checkQueue(queue)).toMatchObject({ messageCount: 0, consumerCount: 1 });
      channel.ack(consumer.received[1], true);
      await channel.cancel(consumer.consumerTag);
      await channel.close();
      const { channel: after } = await t.channel();
      expect(await after.checkQueue(queue)).toMatchObject({ messageCount: 0, consumerCount: 0 });
    },
  },
  {
    scenario:
      'a nack with requeue redelivers: at the head of a classic queue, at the back of a quorum queue with x-delivery-count',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const order: Record<string, string[]> = {};
      for (const type of ['classic', 'quorum'] as const) {
        const queue = t.name(`requeue-${type}`);
        await channel.assertQueue(queue, { arguments: { 'x-queue-type': type } });
        await publishAll(channel, '', [
          [queue, '1'],
          [queue, '2'],
          [queue, '3'],
        ]);
        const first = (await channel.get(queue, { noAck: false })) as GetMessage;
        expect(first.fields.redelivered).toBe(false);
        expect(first.properties.headers?.['x-delivery-count'] ?? 0).toBe(0);
        channel.nack(first, false, true);
        const rest = await t.take(channel, queue, 3);
        order[type] = rest.map(
          (m) =>
            `${m.content.toString()}${m.fields.redelivered ? ' redelivered' : ''}${type === 'quorum' ? ` count ${String(m.properties.headers?.['x-delivery-count'] ?? 0)}` : ''}`,
        );
      }
      // RabbitMQ 3.10 appends a nacked message to a quorum queue's log: it comes back after the others.
      expect(order).toEqual({
        classic: ['1 redelivered', '2', '3'],
        quorum: ['2 count 0', '3 count 0', '1 redelivered count 1'],
      });
    },
  },
  {
    scenario: 'a nack without requeue and a reject dead-letter through x-dead-letter-exchange with x-death',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const events = t.name('events');
      const dlx = t.name('dlx');
      const dlq = t.name('dlq');
      await channel.assertExchange(events, 'topic');
      await channel.assertExchange(dlx, 'direct');
      await channel.assertQueue(dlq);
      await channel.bindQueue(dlq, dlx, 'dead');
      for (const type of ['classic', 'quorum'] as const) {
        const queue = t.name(`rejecting-${type}`);
        await channel.assertQueue(queue, { arguments: consumerQueueArguments(type, dlx, 'dead') });
        await channel.bindQueue(queue, events, `${type}.#`);
        await publishAll(channel, events, [
          [`${type}.nacked`, `${type} nacked`, { headers: { kept: 'yes' }, messageId: 'm-1' }],
          [`${type}.rejected`, `${type} rejected`],
        ]);
        channel.nack((await channel.get(queue)) as GetMessage, false, false);
        channel.reject((await channel.get(queue)) as GetMessage, false);
        const dead = await t.take(channel, dlq, 2);
        expect(bodies(dead)).toEqual([`${type} nacked`, `${type} rejected`]);
        for (const message of dead) {
          const key = message.content.toString().replace(' ', '.');
          expect(message.fields).toMatchObject({ exchange: dlx, routingKey: 'dead', redelivered: false });
          expect(message.properties.headers).toMatchObject({
            'x-death': [
              {
                count: 1,
                reason: 'rejected',
                queue,
                exchange: events,
                'routing-keys': [key],
                time: expect.objectContaining({ '!': 'timestamp' }),
              },
            ],
            'x-first-death-reason': 'rejected',
            'x-first-death-queue': queue,
            'x-first-death-exchange': events,
          });
        }
        // RabbitMQ 3.10 writes no x-last-death-* (3.13 does) and no x-delivery-count on a dead letter.
        expect(Object.keys(dead[1].properties.headers ?? {}).sort()).toEqual([
          'x-death',
          'x-first-death-exchange',
          'x-first-death-queue',
          'x-first-death-reason',
        ]);
        expect(dead[0].properties.headers).toMatchObject({ kept: 'yes' });
        expect(dead[0].properties.messageId).toBe('m-1');
        expect(await channel.checkQueue(queue)).toMatchObject({ messageCount: 0 });
      }
    },
  },
  {
    scenario: 'messages expire by the queue TTL and by their own expiration, dead-lettered as expired',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const dlx = t.name('ttl-dlx');
      const dlq = t.name('ttl-dlq');
      await channel.assertExchange(dlx, 'fanout');
      await channel.assertQueue(dlq);
      await channel.bindQueue(dlq, dlx, '');
      const byQueue = { classic: t.name('ttl-classic'), quorum: t.name('ttl-quorum') };
      const byMessage = t.name('ttl-message');
      for (const type of ['classic', 'quorum'] as const) {
        await channel.assertQueue(byQueue[type], {
          arguments: { 'x-queue-type': type, 'x-message-ttl': 300, 'x-dead-letter-exchange': dlx },
        });
      }
      await channel.assertQueue(byMessage, { arguments: { 'x-dead-letter-exchange': dlx } });
      await publishAll(channel, '', [
        [byQueue.classic, 'classic'],
        [byQueue.quorum, 'quorum'],
        [byMessage, 'own expiration', { expiration: '200' }],
      ]);
      expect((await channel.checkQueue(byMessage)).messageCount).toBe(1);

      await t.transport.advance(300);
      const dead = await t.take(channel, dlq, 3);
      const byBody = Object.fromEntries(dead.map((m) => [m.content.toString(), m]));
      expect(Object.keys(byBody).sort()).toEqual(['classic', 'own expiration', 'quorum']);
      for (const body of ['classic', 'quorum'] as const) {
        const [death] = byBody[body].properties.headers?.['x-death'] as unknown as Array<
          Record<string, unknown>
        >;
        expect(death).toEqual({
          count: 1,
          reason: 'expired',
          queue: byQueue[body],
          exchange: '',
          'routing-keys': [byQueue[body]],
          time: expect.objectContaining({ '!': 'timestamp' }),
        });
      }
      const own = byBody['own expiration'];
      expect(own.properties.expiration).toBeUndefined();
      expect(own.properties.headers?.['x-death']).toEqual([
        {
          count: 1,
          reason: 'expired',
          queue: byMessage,
          exchange: '',
          'routing-keys': [byMessage],
          'original-expiration': '200',
          time: expect.objectContaining({ '!': 'timestamp' }),
        },
      ]);
    },
  },
  {
    scenario:
      "a quorum queue counts deliveries in x-delivery-count and dead-letters past x-delivery-limit as 'delivery_limit'",
    async run(t) {
      const { channel } = await t.confirmChannel();
      const dlx = t.name('limit-dlx');
      const dlq = t.name('limit-dlq');
      const queue = t.name('limited');
      await channel.assertExchange(dlx, 'fanout');
      await channel.assertQueue(dlq);
      await channel.bindQueue(dlq, dlx, '');
      await channel.assertQueue(queue, {
        arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 2, 'x-dead-letter-exchange': dlx },
      });
      await publishAll(channel, '', [[queue, 'crashes']]);
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const message = (await channel.get(queue, { noAck: false })) as GetMessage;
        seen.push(
          `count ${String(message.properties.headers?.['x-delivery-count'])} ${message.fields.redelivered ? 'redelivered' : 'new'}`,
        );
        channel.nack(message, false, true);
        if (i < 2)
          await t.until(
            'the message back in its queue',
            async () => (await channel.checkQueue(queue)).messageCount === 1,
          );
      }
      expect(seen).toEqual(['count 0 new', 'count 1 redelivered', 'count 2 redelivered']);
      const [dead] = await t.take(channel, dlq, 1);
      expect(dead.properties.headers).toMatchObject({
        'x-death': [{ count: 1, reason: 'delivery_limit', queue, exchange: '', 'routing-keys': [queue] }],
        'x-first-death-reason': 'delivery_limit',
      });
      expect(await channel.checkQueue(queue)).toMatchObject({ messageCount: 0 });
    },
  },
  {
    scenario:
      'a single-active-consumer queue delivers to its first consumer only, and to the next once it cancels',
    async run(t) {
      const { channel } = await t.confirmChannel();
      for (const type of ['classic', 'quorum'] as const) {
        const queue = t.name(`sac-${type}`);
        await channel.assertQueue(queue, {
          arguments: { 'x-queue-type': type, 'x-single-active-consumer': true },
        });
        const first = await t.channel();
        const second = await t.channel();
        const active = await recordingConsumer(first.channel, queue);
        const standby = await recordingConsumer(second.channel, queue);
        await publishAll(channel, '', [
          [queue, '1'],
          [queue, '2'],
        ]);
        await t.until('both on the active consumer', () => active.received.length === 2);
        expect(standby.received).toEqual([]);
        first.channel.ack(active.received[1], true);
        await first.channel.cancel(active.consumerTag);
        await publishAll(channel, '', [[queue, '3']]);
        await t.until('the standby takes over', () => standby.received.length === 1);
        expect(bodies(standby.received)).toEqual(['3']);
        await first.channel.close();
        await second.channel.close();
      }
    },
  },
  {
    scenario: 'prefetch bounds the unacknowledged deliveries of a consumer; an ack (one or many) makes room',
    async run(t) {
      const { channel } = await t.confirmChannel();
      for (const type of ['classic', 'quorum'] as const) {
        const queue = t.name(`prefetch-${type}`);
        await channel.assertQueue(queue, { arguments: { 'x-queue-type': type } });
        await publishAll(
          channel,
          '',
          ['1', '2', '3', '4', '5'].map((body) => [queue, body] as [string, string]),
        );
        const consuming = await t.channel();
        await consuming.channel.prefetch(2);
        const consumer = await recordingConsumer(consuming.channel, queue);
        await t.until('two deliveries', () => consumer.received.length === 2);
        expect((await channel.checkQueue(queue)).messageCount).toBe(3);
        consuming.channel.ack(consumer.received[0]);
        await t.until('a third delivery', () => consumer.received.length === 3);
        consuming.channel.ack(consumer.received[2], true);
        await t.until('all five', () => consumer.received.length === 5);
        expect(bodies(consumer.received)).toEqual(['1', '2', '3', '4', '5']);
        consuming.channel.ack(consumer.received[4], true);
        await t.until('the queue empty', async () => (await channel.checkQueue(queue)).messageCount === 0);
        await consuming.channel.close();
      }
    },
  },
  {
    scenario:
      'basic.get takes the head with the count left behind, and a nack with requeue puts it back redelivered',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const queue = t.name('get');
      await channel.assertQueue(queue);
      expect(await channel.get(queue, { noAck: false })).toBe(false);
      await publishAll(channel, '', [
        [
          queue,
          'head',
          { headers: { n: 1 }, messageId: 'id-1', contentType: 'application/json', persistent: true },
        ],
        [queue, 'next'],
      ]);
      const head = (await channel.get(queue, { noAck: false })) as GetMessage;
      expect(head.fields).toMatchObject({
        redelivered: false,
        exchange: '',
        routingKey: queue,
        messageCount: 1,
      });
      expect(head.properties).toMatchObject({
        headers: { n: 1 },
        messageId: 'id-1',
        contentType: 'application/json',
        deliveryMode: 2,
      });
      expect(await channel.checkQueue(queue)).toMatchObject({ messageCount: 1 });
      channel.nack(head, false, true);
      const again = (await channel.get(queue, { noAck: false })) as GetMessage;
      expect([again.content.toString(), again.fields.redelivered, again.fields.messageCount]).toEqual([
        'head',
        true,
        1,
      ]);
      channel.ack(again);

      const fetching = await t.channel();
      const taken = (await fetching.channel.get(queue, { noAck: true })) as GetMessage;
      expect(taken.content.toString()).toBe('next');
      await fetching.channel.close();
      expect(await channel.checkQueue(queue)).toMatchObject({ messageCount: 0 });
    },
  },
  {
    scenario:
      'checkQueue counts ready messages and consumers, and fails with 404 for a missing queue, closing the channel',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const queue = t.name('counted');
      await channel.assertQueue(queue);
      await publishAll(channel, '', [
        [queue, '1'],
        [queue, '2'],
        [queue, '3'],
      ]);
      expect(await channel.assertQueue(queue)).toEqual({ queue, messageCount: 3, consumerCount: 0 });
      const held = (await channel.get(queue, { noAck: false })) as GetMessage;
      expect(await channel.checkQueue(queue)).toEqual({ queue, messageCount: 2, consumerCount: 0 });
      channel.ack(held);

      const checking = await t.channel();
      const missing = t.name('missing');
      const error = (await checking.channel.checkQueue(missing).catch((e: unknown) => e)) as Error & {
        code?: number;
      };
      expect([error.code, brokerText(error)]).toEqual([
        404,
        `NOT_FOUND - no queue '${missing}' in vhost '/'`,
      ]);
      await t.until('the channel closes', () => checking.closed());
    },
  },
  {
    scenario: 'deleteQueue answers the ready count and cancels the consumers of the queue',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const queue = t.name('deleted');
      await channel.assertQueue(queue);
      await publishAll(channel, '', [
        [queue, '1'],
        [queue, '2'],
      ]);
      expect(await channel.deleteQueue(queue)).toEqual({ messageCount: 2 });
      await channel.assertQueue(queue);
      const consuming = await t.channel();
      const consumer = await recordingConsumer(consuming.channel, queue);
      expect(await channel.deleteQueue(queue)).toEqual({ messageCount: 0 });
      await t.until('the consumer is cancelled', () => consumer.cancelled());
      expect(consuming.closed()).toBe(false);
    },
  },
  {
    scenario:
      'a closing channel returns what it held ahead of the rest, in order (a quorum queue too, unlike a nack)',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const order: Record<string, string[]> = {};
      for (const type of ['classic', 'quorum'] as const) {
        const queue = t.name(`returned-${type}`);
        await channel.assertQueue(queue, { arguments: { 'x-queue-type': type } });
        await publishAll(
          channel,
          '',
          ['1', '2', '3', '4'].map((body) => [queue, body] as [string, string]),
        );
        const holding = await t.channel();
        for (let i = 0; i < 3; i++) await holding.channel.get(queue, { noAck: false });
        await holding.channel.close();
        const back = await t.take(channel, queue, 4);
        order[type] = back.map((m) => `${m.content.toString()}${m.fields.redelivered ? ' redelivered' : ''}`);
      }
      expect(order).toEqual({
        classic: ['1 redelivered', '2 redelivered', '3 redelivered', '4'],
        quorum: ['1 redelivered', '2 redelivered', '3 redelivered', '4'],
      });
    },
  },
  {
    scenario:
      'closing a channel requeues what it held, redelivered; an unknown delivery tag closes the channel with 406',
    async run(t) {
      const { channel } = await t.confirmChannel();
      const queue = t.name('held');
      await channel.assertQueue(queue);
      await publishAll(channel, '', [
        [queue, '1'],
        [queue, '2'],
      ]);
      const holding = await t.channel();
      const consumer = await recordingConsumer(holding.channel, queue);
      await t.until('both delivered', () => consumer.received.length === 2);
      holding.channel.ack(consumer.received[0]);
      holding.channel.ack(consumer.received[0]);
      await t.until('the channel closes', () => holding.closed());
      expect(holding.errors.map((e) => [e.code, brokerText(e)])).toEqual([
        [406, 'PRECONDITION_FAILED - unknown delivery tag 1'],
      ]);
      const back = await t.take(channel, queue, 1);
      expect(back.map((m) => [m.content.toString(), m.fields.redelivered])).toEqual([['2', true]]);
    },
  },
];

@MessageType({ type: 'contract.counted', idempotencyKey: (m: StockCounted) => `counted:${m.sku}` })
class StockCounted {
  @IsString() sku!: string;
  @IsInt() quantity!: number;
}

/** What a contract consumer saw: `<sku>:<attempt>`. */
type Seen = string[];

/** The module under contract: one app with a consumer per outcome, its queues named for the case run. */
export interface ContractApp {
  readonly app: INestApplicationContext;
  readonly queues: { handled: string; failing: string; refusing: string };
  readonly seen: { handled: Seen; failing: Seen; refusing: Seen };
  /** The exchange the app publishes to and binds its queues on. */
  readonly exchange: string;
}

/** Retry settings with short delays, so the retries on RabbitMQ take about a second. */
const CONTRACT_RETRY = { maxAttempts: 3, initialDelayMs: 200, maxDelayMs: 400 } as const;

/**
 * Starts ReliableMessagingModule on the transport with three consumers of `contract.counted`, each on its own
 * queue: one that handles, one that always fails (retried, then dead-lettered) and one that refuses with a
 * NonRetryableError. The queues bind on `<outcome>.counted`, so a routing key picks the consumer.
 */
export async function startContractApp(t: ContractContext): Promise<ContractApp> {
  const queues = { handled: t.name('handled'), failing: t.name('failing'), refusing: t.name('refusing') };
  const seen = { handled: [] as Seen, failing: [] as Seen, refusing: [] as Seen };
  const exchange = t.name('events');
  for (const queue of Object.values(queues)) t.name(`${queue.slice(queue.lastIndexOf('.') + 1)}.dlq`);
  for (const name of [
    ...delayLevelNames(exchange),
    deliverExchangeName(exchange),
    `${exchange}.dead-letter`,
  ]) {
    t.track(name);
  }

  @Injectable()
  class ContractConsumers {
    @Consume({ queue: queues.handled, routingKeys: ['handled.#'], retry: CONTRACT_RETRY })
    async handle(event: StockCounted, ctx: MessageContext): Promise<void> {
      seen.handled.push(`${event.sku}:${ctx.attempt}`);
      await Promise.resolve();
    }

    @Consume({ queue: queues.failing, routingKeys: ['failing.#'], retry: CONTRACT_RETRY })
    async fail(event: StockCounted, ctx: MessageContext): Promise<void> {
      seen.failing.push(`${event.sku}:${ctx.attempt}`);
      await Promise.resolve();
      throw new Error(`the count of ${event.sku} does not add up`);
    }

    @Consume({ queue: queues.refusing, routingKeys: ['refusing.#'], retry: CONTRACT_RETRY })
    async refuse(event: StockCounted, ctx: MessageContext): Promise<void> {
      seen.refusing.push(`${event.sku}:${ctx.attempt}`);
      await Promise.resolve();
      throw new NonRetryableError(`${event.sku} is not a stocked item`);
    }
  }

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        ...t.transport.moduleOptions(),
        exchange,
        connectionName: `${exchange}.app`,
        metricsRegistry: new Registry(),
      }),
    ],
    providers: [ContractConsumers],
  })
  class ContractAppModule {}

  const app = await NestFactory.createApplicationContext(ContractAppModule, { logger: false });
  return { app, queues, seen, exchange };
}

/** A message as another service would publish it: the envelope's properties, and a body of our choosing. */
function envelope(id: string): Options.Publish {
  return {
    messageId: id,
    type: 'contract.counted',
    contentType: 'application/json',
    persistent: true,
    headers: { [HEADERS.idempotencyKey]: `key-${id}`, [HEADERS.schemaVersion]: '1.0' },
  };
}

/** A module-level case: the module on the transport, given its running app. */
export interface ModuleContractCase {
  readonly scenario: string;
  run(t: ContractContext, app: ContractApp): Promise<void>;
}

/** Waits for the dead letter in `queue` whose message id or body mentions `id`, and takes it. */
async function deadLetter(t: ContractContext, queue: string, id: string): Promise<GetMessage> {
  const { channel } = await t.channel();
  let found: GetMessage | undefined;
  await t.until(`the dead letter ${id} in ${queue}`, async () => {
    found ??= (await t.drain(channel, queue)).find(
      (m) => m.properties.messageId === id || m.content.toString().includes(`"${id}"`),
    );
    return found !== undefined;
  });
  await channel.close();
  return found as GetMessage;
}

/** The module-level cases: what the module makes of the transport. */
export const MODULE_CASES: ModuleContractCase[] = [
  {
    scenario: 'a published message is handled once and acknowledged: its queue empties',
    async run(t, { app, queues, seen }) {
      await app
        .get(MessagePublisher)
        .publish(Object.assign(new StockCounted(), { sku: 'ok-1', quantity: 3 }), {
          routingKey: 'handled.counted',
        });
      await t.until('ok-1 handled', () => seen.handled.includes('ok-1:1'));
      const { channel } = await t.channel();
      await t.until('the queue empty, nothing unacknowledged', async () => {
        const { messageCount } = await channel.checkQueue(queues.handled);
        return messageCount === 0;
      });
      await channel.close();
      expect(seen.handled.filter((s) => s.startsWith('ok-1'))).toEqual(['ok-1:1']);
    },
  },
  {
    scenario:
      "a failing handler is retried through the delay levels (attempts 1, 2, 3), then dead-lettered as 'attempts-exhausted'",
    async run(t, { app, queues, seen }) {
      const message = Object.assign(new StockCounted(), { sku: 'broken-1', quantity: 1 });
      await app.get(MessagePublisher).publish(message, { routingKey: 'failing.counted' });
      for (const attempt of [1, 2, 3]) {
        await t.until(`attempt ${attempt}`, () => seen.failing.includes(`broken-1:${attempt}`));
        await t.transport.advance(CONTRACT_RETRY.maxDelayMs + DELAY_RESOLUTION_MS);
      }
      const dead = await deadLetter(t, `${queues.failing}.dlq`, 'broken-1');
      expect(seen.failing.filter((s) => s.startsWith('broken-1'))).toEqual([
        'broken-1:1',
        'broken-1:2',
        'broken-1:3',
      ]);
      expect(dead.properties.headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
        [DEAD_LETTER_HEADERS.attempts]: 3,
        [DEAD_LETTER_HEADERS.queue]: queues.failing,
        [DEAD_LETTER_HEADERS.errorMessage]: 'the count of broken-1 does not add up',
      });
      expect(JSON.parse(dead.content.toString())).toEqual({ sku: 'broken-1', quantity: 1 });
    },
  },
  {
    scenario: 'a NonRetryableError dead-letters at once, after one attempt',
    async run(t, { app, queues, seen }) {
      const message = Object.assign(new StockCounted(), { sku: 'refused-1', quantity: 1 });
      await app.get(MessagePublisher).publish(message, { routingKey: 'refusing.counted' });
      const dead = await deadLetter(t, `${queues.refusing}.dlq`, 'refused-1');
      expect(seen.refusing.filter((s) => s.startsWith('refused-1'))).toEqual(['refused-1:1']);
      expect(dead.properties.headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: 'non-retryable',
        [DEAD_LETTER_HEADERS.attempts]: 1,
        [DEAD_LETTER_HEADERS.errorMessage]: 'refused-1 is not a stocked item',
      });
    },
  },
  ...[
    { what: 'a body that is not JSON', body: '{"sku": "x", ', reason: 'malformed-json' },
    {
      what: 'a payload failing validation',
      body: '{"sku":"x","quantity":"many"}',
      reason: 'validation-failed',
    },
  ].map(({ what, body, reason }): ModuleContractCase => ({
    scenario: `${what} is dead-lettered at once as '${reason}', never reaching the handler`,
    async run(t, { exchange, queues, seen }) {
      const id = `raw-${reason}`;
      const publishing = await t.confirmChannel();
      publishing.channel.publish(exchange, 'handled.counted', Buffer.from(body), envelope(id));
      await publishing.channel.waitForConfirms();
      const dead = await deadLetter(t, `${queues.handled}.dlq`, id);
      expect(dead.properties.headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: reason,
        [DEAD_LETTER_HEADERS.queue]: queues.handled,
      });
      expect(dead.content.toString()).toBe(body);
      expect(seen.handled.filter((s) => s.startsWith('x:'))).toEqual([]);
    },
  })),
];
