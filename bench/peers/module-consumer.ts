import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { moduleConsumerApp } from './module-app';
import { runPeer } from './peer-child';

/** The module's contender of the peers benchmark, in a process of its own; its consumer starts with the app. */
runPeer(async ({ url, exchange, queue, queueType, prefetch }, progress) => {
  const app = await NestFactory.createApplicationContext(
    moduleConsumerApp(url, exchange, queue, queueType, prefetch, progress),
    { logger: ['error', 'warn'] },
  );
  return () => app.close();
});
