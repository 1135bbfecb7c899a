import cliProgress from 'cli-progress';

/** Below this many messages to read, no progress bar is drawn. */
const MIN_TOTAL = 200;

/**
 * A progress bar on stderr for long reads of dead-letter queues, drawn only on a terminal and only when there
 * are enough messages to be worth it, so piped output and scripts stay clean.
 */
export class ProgressReporter {
  private bar?: cliProgress.SingleBar;

  constructor(
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly label: string,
  ) {}

  /** Called with messages read so far and the total to read. */
  readonly update = (done: number, total: number): void => {
    if (!this.bar) {
      if (!this.stream.isTTY || total < MIN_TOTAL) return;
      this.bar = new cliProgress.SingleBar(
        {
          stream: this.stream,
          format: `${this.label} [{bar}] {value}/{total} messages | {eta_formatted} left`,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, done);
      return;
    }
    this.bar.update(done);
  };

  /** Removes the bar. */
  stop(): void {
    this.bar?.stop();
    this.bar = undefined;
  }
}
