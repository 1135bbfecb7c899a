import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import {
  Injectable,
  Module,
  type CanActivate,
  type DynamicModule,
  type INestApplication,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Consume, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import { BenchOrderPlaced } from './bench-message';
import { report, runChild, stopRequested } from './bench-child';
import { AMQP_URL } from './harness';

/** Lets every request in: the suite measures the admin API and the console, not their sign-in. */
@Injectable()
class OpenDoor implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

/**
 * An app with one consumer of `queue` (a quorum queue: the module declares its dead-letter queue, `<queue>.dlq`,
 * as the app's own) and the admin API and console of DeadLetterAdminModule, as an operator's app serves them.
 */
function deadLettersModule(prefix: string, queue: string): DynamicModule {
  @Injectable()
  class DeadLetteredConsumer {
    @Consume({ queue, queueType: 'quorum' })
    async onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {}
  }

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: `${prefix}.events`,
        connectionName: `${queue}.admin`,
      }),
      DeadLetterAdminModule.register({ guard: OpenDoor, console: true }),
    ],
    providers: [DeadLetteredConsumer],
  })
  class DeadLettersAppModule {}
  return { module: DeadLettersAppModule };
}

/**
 * The scale suite's dead-letters process: serves the admin API and console of an app consuming SCALE_QUEUE
 * (under SCALE_PREFIX) on a free port, reports `{ event: 'ready', base }` as a line of JSON on stdout, then
 * waits for `stop` on stdin and closes. The suite reads its memory from /proc meanwhile.
 */
async function main(): Promise<void> {
  const prefix = String(process.env.SCALE_PREFIX);
  const queue = String(process.env.SCALE_QUEUE);
  const app = await NestFactory.create<INestApplication<Server>>(deadLettersModule(prefix, queue), {
    logger: ['error', 'warn'],
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  report({ event: 'ready', base: `http://127.0.0.1:${port}/admin/dead-letters` });
  await stopRequested();
  await app.close();
}

runChild(main);
