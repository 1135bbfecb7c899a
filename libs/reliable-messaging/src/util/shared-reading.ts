/**
 * One reading shared by concurrent and recent callers for a short while, so a scrape, a health check and a
 * tool asking together cost the broker one round of queries. A failed reading is not shared.
 */
export class SharedReading<T> {
  private shared?: { at: number; reading: Promise<T> };

  constructor(private readonly shareForMs: number) {}

  get(read: () => Promise<T>): Promise<T> {
    if (this.shared && Date.now() - this.shared.at < this.shareForMs) return this.shared.reading;
    const reading = read();
    const shared = { at: Date.now(), reading };
    this.shared = shared;
    reading.catch(() => {
      if (this.shared === shared) this.shared = undefined;
    });
    return reading;
  }
}
