import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import type { ChannelModel } from 'amqplib';
import { inMemoryTransport, rabbitMqTransport, type Transport } from './support/contract-transports';
import {
  CHANNEL_CASES,
  ContractContext,
  MODULE_CASES,
  startContractApp,
  type ContractApp,
} from './support/transport-contract';

/**
 * The transport contract: every case runs on the in-memory broker and on RabbitMQ and must pass on both. A case
 * that fails on one transport only is a difference between them; it is fixed in the in-memory broker.
 */
describe.each([
  ['in-memory', inMemoryTransport],
  ['rabbitmq', () => rabbitMqTransport()],
])('the transport contract on %s', (_name, makeTransport: () => Transport) => {
  const run = `rm-contract-${randomBytes(3).toString('hex')}`;
  let transport: Transport;
  let connection: ChannelModel;
  const contexts: ContractContext[] = [];
  let sequence = 0;

  const context = (label: string) => {
    const t = new ContractContext(transport, connection, `${run}.${transport.name}.${label}${++sequence}`);
    contexts.push(t);
    return t;
  };

  beforeAll(async () => {
    transport = makeTransport();
    connection = await transport.connect();
  });

  afterAll(async () => {
    for (const t of contexts.splice(0)) await t.cleanUp();
    await transport.close();
  });

  describe('channel level', () => {
    it.each(CHANNEL_CASES.map((c) => [c.scenario, c] as const))('%s', async (_scenario, contractCase) => {
      await contractCase.run(context('c'));
    });
  });

  describe('module level', () => {
    let t: ContractContext;
    let app: ContractApp;

    beforeAll(async () => {
      t = context('m');
      app = await startContractApp(t);
    });

    afterAll(async () => {
      await app?.app.close();
    });

    it.each(MODULE_CASES.map((c) => [c.scenario, c] as const))('%s', async (_scenario, contractCase) => {
      await contractCase.run(t, app);
    });
  });
});
