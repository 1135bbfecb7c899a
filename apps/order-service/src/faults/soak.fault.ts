import { readFile } from 'node:fs/promises';
import { between, pause, type Fault, type FaultContext } from './fault';
import type { OrderLoad } from './order-load';

/** RSS is sampled from this far into an app process's life. */
const RSS_WARM_UP_MS = 60_000;
const RSS_SAMPLE_MS = 5_000;
/** The stretch at each end of a process's sampled life whose lowest RSS is compared: a minute of quiet samples. */
const RSS_WINDOW_SAMPLES = 12;
/** The most the lowest RSS of the last window may exceed that of the first. */
const RSS_GROWTH_LIMIT = 0.2;

/** The app process's resident set size in bytes, from /proc. */
async function rssOf(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kb = status && /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : undefined;
}

/**
 * The soak (`--soak`): the load runs until `orders` have been accepted while faults from the matrix, picked at
 * random, fire every 20 to 40 s. Each app process that lives past its warm-up has its RSS sampled every 5 s
 * while no fault is firing; one whose lowest RSS over its last minute of such samples exceeds the lowest over its
 * first minute by more than 20% fails the run. A leak raises that floor for good; an outage's backlog raises the
 * peaks and the means while it lasts (the first soak saw minute means rise 21% in a process killed right after
 * one), and its heap comes back. The means and the peak are reported too.
 */
export function soakFault(faults: readonly Fault[], orders: number, load: OrderLoad): Fault {
  return {
    name: 'soak',
    description: `${orders} orders while random faults fire every 20 to 40 s`,
    machineWide: faults.some((fault) => fault.machineWide),
    async inject(context) {
      const fired = new Map<string, number>();
      const samples = new Map<number, { bornAt: number; rss: number[] }>();
      const firing = { now: false };
      const sampling = sampleRss(context, samples, firing);
      let next = Date.now() + between(20_000, 40_000);
      try {
        while (load.totalAccepted < orders) {
          await pause(1_000, context.signal);
          if (Date.now() < next) continue;
          const fault = faults[Math.floor(Math.random() * faults.length)];
          fired.set(fault.name, (fired.get(fault.name) ?? 0) + 1);
          firing.now = true;
          await fault
            .inject(context)
            .catch((error: unknown) => {
              if (context.signal.aborted) throw error;
              context.fail(
                `${fault.name} did not run as meant: ${error instanceof Error ? error.message : String(error)}`,
              );
            })
            .finally(() => (firing.now = false));
          next = Date.now() + between(20_000, 40_000);
        }
      } finally {
        sampling.stop();
      }
      context.note(`faults fired: ${[...fired].map(([name, count]) => `${name} ${count}`).join(', ')}`);
      judgeRss(context, samples);
    },
  };
}

function sampleRss(
  context: FaultContext,
  samples: Map<number, { bornAt: number; rss: number[] }>,
  firing: { readonly now: boolean },
): { stop(): void } {
  const timer = setInterval(() => {
    const pid = context.app.process?.pid;
    if (pid === undefined) return;
    const process = samples.get(pid) ?? { bornAt: Date.now(), rss: [] };
    samples.set(pid, process);
    if (firing.now || Date.now() - process.bornAt < RSS_WARM_UP_MS) return;
    void rssOf(pid).then((rss) => rss !== undefined && process.rss.push(rss));
  }, RSS_SAMPLE_MS);
  return { stop: () => clearInterval(timer) };
}

function judgeRss(context: FaultContext, samples: Map<number, { bornAt: number; rss: number[] }>): void {
  const judged = [...samples.values()].filter((process) => process.rss.length >= 2 * RSS_WINDOW_SAMPLES);
  if (judged.length === 0) {
    context.note('RSS not judged: no app process had two quiet minutes past its warm-up');
    return;
  }
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const growth = judged.map((process) => {
    const first = process.rss.slice(0, RSS_WINDOW_SAMPLES);
    const last = process.rss.slice(-RSS_WINDOW_SAMPLES);
    return {
      firstFloor: Math.min(...first),
      lastFloor: Math.min(...last),
      firstMean: mean(first),
      lastMean: mean(last),
      max: Math.max(...process.rss),
      minutes: (process.rss.length * RSS_SAMPLE_MS) / 60_000,
    };
  });
  const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;
  context.note(
    `RSS after warm-up, per app process with 2 quiet minutes past it (first quiet minute's floor -> last one's; means; peak; quiet minutes sampled): ${growth
      .map(
        (g) =>
          `${mb(g.firstFloor)} -> ${mb(g.lastFloor)} (means ${mb(g.firstMean)} -> ${mb(g.lastMean)}, peak ${mb(g.max)}, ${g.minutes.toFixed(0)} min)`,
      )
      .join('; ')}`,
  );
  for (const g of growth) {
    if (g.lastFloor > g.firstFloor * (1 + RSS_GROWTH_LIMIT)) {
      context.fail(
        `RSS's floor grew from ${mb(g.firstFloor)} to ${mb(g.lastFloor)} (lowest of a quiet minute) after warm-up, more than 20%`,
      );
    }
  }
}
