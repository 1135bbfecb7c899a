// Tracing first: the SDK must patch HTTP before anything loads it.
import './observability/tracing';
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConsoleLogger, Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { APP_CONFIG, readLogFormat, type AppConfig } from './config/app-config';
import { faultPointInterceptors, installFaultPoints } from './faults/fault-points';

async function bootstrap(): Promise<void> {
  // Only the fault matrix (`npm run faults`) sets FAULT_POINTS; otherwise this does nothing.
  installFaultPoints(process.env);
  // LOG_FORMAT=json: one JSON object a line, as log pipelines expect; text honours NO_COLOR.
  const json = readLogFormat(process.env) === 'json';
  // abortOnError off: a failed start is reported below and exits with code 1 instead of aborting the process.
  // forceCloseConnections: on shutdown, keep-alive HTTP connections are closed too; under steady traffic they never
  // go idle, and the server would wait for them past any deadline (the fault matrix's SIGTERM fault found this).
  // bodyParser off: JsonBodyMiddleware reads the raw bytes itself, to refuse invalid UTF-8 that Nest's JSON parser
  // would replace with U+FFFD, and bodies too deep or too wide before class-transformer builds objects from them.
  const app = await NestFactory.create<INestApplication<Server>>(AppModule, {
    logger: new ConsoleLogger({ json, colors: !json && !process.env.NO_COLOR }),
    abortOnError: false,
    forceCloseConnections: true,
    bodyParser: false,
  });
  // SIGTERM and SIGINT run the messaging module's shutdown: readiness fails, consumers drain, the relay
  // finishes its batch, then the connection closes and the process exits with code 0.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
  app.useGlobalInterceptors(...faultPointInterceptors(process.env));
  const config = app.get<AppConfig>(APP_CONFIG);
  await app.listen(config.port);
  const { port } = app.getHttpServer().address() as AddressInfo;
  // The demo and the end-to-end tests wait for this line.
  Logger.log(`order service listening on port ${port}`, 'OrderService');
}

bootstrap().catch((error: unknown) => {
  Logger.error(
    `order service failed to start: ${error instanceof Error ? error.message : String(error)}`,
    'OrderService',
  );
  process.exit(1);
});
