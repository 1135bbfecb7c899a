import { waitUntil, type Fault, type FaultContext } from './fault';
import { HarnessBroker } from './harness-broker';
import { RabbitCluster, type ClusterNode } from './rabbit-cluster';

/** How soon after the kill the app must take new work again: an order placed after it gets paid. */
const RESUME_LIMIT_MS = 10_000;
const NEW_LEADER_TIMEOUT_MS = 30_000;

/**
 * Fault 14: a 3-node cluster loses the node that leads the app's quorum queues to SIGKILL, with no goodbye to
 * its peers or clients. The cycle runs on a stage of its own: a cluster started beside the machine's broker
 * (`scripts/rabbitmq-cluster.sh`), with the app moved onto it (`AMQP_URL` lists the three nodes) and back
 * afterwards. Beyond the table's criteria, the app must take new work again within 10 s of the kill: an order
 * placed after the kill is paid, which needs the relay to publish to, and the consumer to take from, the
 * surviving nodes.
 */
export function clusterLeaderKillFault(): Fault {
  let cluster: RabbitCluster | undefined;
  return {
    name: 'cluster-leader-kill',
    description: 'a 3-node cluster loses the node leading the quorum queues to SIGKILL',
    machineWide: false,
    stage: {
      async enter({ app }) {
        const started = await RabbitCluster.start();
        cluster = started;
        const urls = started.nodes.map((node) => node.url);
        try {
          await app.moveTo({ AMQP_URL: urls.join(',') });
        } catch (error) {
          await started.stop();
          throw error;
        }
        const broker = new HarnessBroker(urls);
        return {
          broker,
          async leave() {
            await broker.close();
            try {
              await app.moveTo({});
            } finally {
              cluster = undefined;
              await started.stop();
            }
          },
        };
      },
    },
    async inject(context) {
      if (!cluster) throw new Error('the cluster fault runs only on its stage');
      context.note(`cluster started in ${(cluster.startupMs / 1000).toFixed(1)} s`);
      const queue = context.environment.names.queues.sagaPlaced;
      const leader = await cluster.leaderOf(queue, cluster.nodes[0]);
      const survivor = cluster.nodes.find((node) => node !== leader)!;
      await cluster.kill(leader);
      const killedAt = new Date();
      context.note(`killed ${leader.name}, the leader of ${queue}`);
      await waitUntil(
        `a new leader of ${queue}`,
        async () => (await cluster!.leaderOf(queue, survivor)) !== leader,
        NEW_LEADER_TIMEOUT_MS,
        context.signal,
      );
      await judgeResumption(context, killedAt, leader);
    },
  };
}

/** Waits until an order placed after `killedAt` is paid; fails the row if that took longer than the limit. */
async function judgeResumption(context: FaultContext, killedAt: Date, leader: ClusterNode): Promise<void> {
  let resumedInMs: number | undefined;
  await waitUntil(
    `payments resuming after ${leader.name} was killed`,
    async () => {
      const { rows } = await context.database.query<{ first: Date | null }>(
        'SELECT min(paid_at) AS first FROM orders WHERE created_at > $1 AND paid_at IS NOT NULL',
        [killedAt],
      );
      const first = rows[0].first;
      if (first) resumedInMs = first.getTime() - killedAt.getTime();
      return first !== null;
    },
    RESUME_LIMIT_MS * 6,
    context.signal,
  );
  context.note(`an order placed after the kill was paid ${(resumedInMs! / 1000).toFixed(1)} s after it`);
  if (resumedInMs! > RESUME_LIMIT_MS) {
    context.fail(`payments resumed ${(resumedInMs! / 1000).toFixed(1)} s after the kill, over 10 s`);
  }
}
