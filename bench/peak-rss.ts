/**
 * Preloaded (`node --require peak-rss.js`) into a process the scale suite runs, such as the `dlq` bin: as the
 * process exits it writes its peak resident set size (`getrusage`'s `ru_maxrss`, in bytes) to stderr as one line,
 * `peak-rss <bytes>`, which the suite reads.
 */
process.on('exit', () => {
  process.stderr.write(`peak-rss ${process.resourceUsage().maxRSS * 1024}\n`);
});
