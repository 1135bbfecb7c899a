/**
 * The @golevelup/nestjs-rabbitmq contender of the peers benchmark (bench/peers.bench.ts): a NestJS 11 app whose
 * one `@RabbitSubscribe()` handler does no work of its own, draining PEERS_MESSAGES messages from PEERS_QUEUE with
 * PEERS_PREFETCH unacknowledged at once. golevelup parses the JSON body and acks after the handler resolves.
 * Prints one JSON line, `{ messages, seconds, cpuMicros }`, timed from the first delivery to the last handled one.
 *
 * Plain JavaScript, so it runs without a build step from this folder's own node_modules; decorators are applied
 * with `Reflect.decorate`, as a TypeScript compiler would emit them.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';

const queue = required('PEERS_QUEUE');
const prefetch = Number(required('PEERS_PREFETCH'));
const expected = Number(required('PEERS_MESSAGES'));
const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

// The suite's IPC channel closes when the suite ends, so this process never outlives it.
process.on('disconnect', () => process.exit(1));

let count = 0;
let cpu;
let started;
let finish;
const finished = new Promise((resolve) => (finish = resolve));

class BenchConsumer {
  async onOrderPlaced(_event) {
    if (count === 0) {
      cpu = process.cpuUsage();
      started = performance.now();
    }
    if (++count === expected) {
      const used = process.cpuUsage(cpu);
      finish({
        messages: expected,
        seconds: (performance.now() - started) / 1000,
        cpuMicros: used.user + used.system,
      });
    }
  }
}
// The queue is the benchmark's, declared with the module's arguments: checked, not asserted.
decorateMethod(BenchConsumer, 'onOrderPlaced', RabbitSubscribe({ queue, createQueueIfNotExists: false }));
Injectable()(BenchConsumer);

class BenchModule {}
Module({
  imports: [
    RabbitMQModule.forRoot({ uri: url, prefetchCount: prefetch, connectionInitOptions: { wait: true } }),
  ],
  providers: [BenchConsumer],
})(BenchModule);

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
const measurement = await finished;
process.stdout.write(`${JSON.stringify(measurement)}\n`);
// NOTE: closed right after its last acks, golevelup (on amqp-connection-manager) leaves some of those deliveries
// unacknowledged on a quorum queue. Every contender pauses alike (ACK_SETTLE_MS in bench/peers/peer-child.ts),
// outside the timed run; the suite checks the queue is empty after.
await new Promise((resolve) => setTimeout(resolve, 500));
await app.close();
process.exit(0);

function decorateMethod(target, key, decorator) {
  const descriptor = Object.getOwnPropertyDescriptor(target.prototype, key);
  Object.defineProperty(
    target.prototype,
    key,
    Reflect.decorate([decorator], target.prototype, key, descriptor),
  );
}

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: bench/peers.bench.ts starts this script`);
  return value;
}
