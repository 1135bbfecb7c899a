import * as amqp from 'amqplib';
import { runPeer } from './peer-child';

/**
 * The raw amqplib contender of the peers benchmark: the consume suite's raw consumer (JSON.parse as its work, an
 * ack for each message after the work), in a process of its own.
 */
runPeer(async ({ queue, prefetch, url }, progress) => {
  const connection = await amqp.connect(url, { clientProperties: { connection_name: `${queue}.raw` } });
  const channel = await connection.createChannel();
  await channel.prefetch(prefetch);
  const work = async (message: amqp.ConsumeMessage): Promise<void> => {
    JSON.parse(message.content.toString('utf8'));
  };
  const { consumerTag } = await channel.consume(queue, (message) => {
    if (!message) return;
    progress.started();
    void work(message)
      .then(() => {
        channel.ack(message);
        progress.completed();
      })
      .catch((error: unknown) => progress.fail(error));
  });
  return async () => {
    await channel.cancel(consumerTag);
    await connection.close();
  };
});
