import { BrokerAsPromised, withDefaultConfig } from 'rascal';
import { runPeer } from './peer-child';

/**
 * The rascal contender of the peers benchmark: a subscription with rascal's defaults and the run's prefetch,
 * whose listener acks each message (rascal has parsed its JSON body already).
 */
runPeer(async ({ queue, prefetch, url }, progress) => {
  const broker = await BrokerAsPromised.create(
    withDefaultConfig({
      vhosts: {
        '/': {
          connection: { url },
          // The queue is the benchmark's, declared with the module's arguments: checked, not asserted.
          queues: { [queue]: { assert: false, check: true } },
          subscriptions: { bench: { queue, prefetch } },
        },
      },
    }),
  );
  broker.on('error', (error: Error) => progress.fail(error));
  const subscription = await broker.subscribe('bench');
  subscription.on('message', (_message, _content, ackOrNack: () => void) => {
    progress.started();
    ackOrNack();
    progress.completed();
  });
  subscription.on('error', (error: Error) => progress.fail(error));
  return () => broker.shutdown();
});
