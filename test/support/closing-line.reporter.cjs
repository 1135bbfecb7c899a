/**
 * Ends a Jest run with one plain line, `Tests: N passed, N failed, N skipped`, which CI reads to tell a run
 * that tested something from one that ran nothing. Printed at exit, after Jest's own summary.
 *
 * NOTE: a spec whose app failed to start can leave connections open, and Jest then waits for them forever
 * (it only warns). So a run that has not ended a few seconds after its last result exits, with the run's
 * outcome as its code. Jest's `forceExit` would end it too, but it silences what is written at exit.
 */
const LINGER_MS = 10_000;

class ClosingLineReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const line = `Tests: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
    setTimeout(() => {
      process.stderr.write(`handles still open ${LINGER_MS / 1000} s after the run: exiting\n`);
      process.exit(results.success ? 0 : 1);
    }, LINGER_MS).unref();
  }
}

module.exports = ClosingLineReporter;
