import { Presets, SingleBar } from 'cli-progress';

/** The state shown on the progress line. */
export interface ProgressSnapshot {
  /** Orders the app accepted so far, and how many the demo will place. */
  placed: number;
  total: number;
  /** Orders paid (including those shipped since), shipped, and with their receipt sent. */
  paid: number;
  shipped: number;
  receipts: number;
  deadLetters: number;
  elapsedMs: number;
}

const PLAIN_LINE_INTERVAL_MS = 1000;

/**
 * A live progress line: a bar redrawn in place on a terminal, plain lines (at most one a second, only on change)
 * when the output is a file or a pipe, such as CI logs.
 */
export class ProgressDisplay {
  private readonly bar?: SingleBar;
  private lastPlain = '';
  private lastPlainAt = 0;

  constructor(
    total: number,
    private readonly stream: NodeJS.WriteStream = process.stdout,
  ) {
    if (stream.isTTY) {
      this.bar = new SingleBar(
        {
          stream,
          format:
            '  {bar} {value}/{total} done | placed {placed} paid {paid} shipped {shipped} receipts {receipts} | DLQ {deadLetters} | {seconds} s',
          barsize: 24,
          hideCursor: true,
          clearOnComplete: false,
        },
        Presets.shades_classic,
      );
      this.bar.start(
        total,
        0,
        this.payload({ placed: 0, total, paid: 0, shipped: 0, receipts: 0, deadLetters: 0, elapsedMs: 0 }),
      );
    }
  }

  update(snapshot: ProgressSnapshot): void {
    const done = Math.min(snapshot.shipped, snapshot.receipts);
    if (this.bar) {
      this.bar.update(done, this.payload(snapshot));
      return;
    }
    const line =
      `placed ${snapshot.placed}/${snapshot.total}, paid ${snapshot.paid}, shipped ${snapshot.shipped}, ` +
      `receipts ${snapshot.receipts}, done ${done}, dead letters ${snapshot.deadLetters}`;
    const now = Date.now();
    if (line === this.lastPlain || now - this.lastPlainAt < PLAIN_LINE_INTERVAL_MS) return;
    this.lastPlain = line;
    this.lastPlainAt = now;
    this.stream.write(`  [${(snapshot.elapsedMs / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  }

  /** Draws the final state and leaves the line in place. */
  stop(snapshot: ProgressSnapshot): void {
    if (this.bar) {
      this.update(snapshot);
      this.bar.stop();
      return;
    }
    this.lastPlainAt = 0;
    this.update(snapshot);
  }

  private payload(snapshot: ProgressSnapshot): Record<string, string | number> {
    return { ...snapshot, seconds: (snapshot.elapsedMs / 1000).toFixed(1) };
  }
}
