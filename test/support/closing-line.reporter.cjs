const { appendFileSync } = require('node:fs');

/**
 * Ends a Jest run with one plain line, `Tests: N passed, N failed, N skipped`, which CI reads to tell a run
 * that tested something from one that ran nothing. Printed at exit, after Jest's own summary. Under
 * `scripts/run-e2e.mjs` (`RM_TEST_COUNTS_FILE` set) the counts go to that file instead, and the script prints
 * one line for its two runs.
 *
 * Jest's `forceExit` is off: a spec that leaves a connection, a timer or a child process open keeps the run
 * from ending, so a leak shows up as a hung run here rather than in production.
 */
class ClosingLineReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const counts = {
      passed: numPassedTests,
      failed: numFailedTests,
      skipped: numPendingTests + numTodoTests,
    };
    if (process.env.RM_TEST_COUNTS_FILE) {
      appendFileSync(process.env.RM_TEST_COUNTS_FILE, `${JSON.stringify(counts)}\n`);
      return;
    }
    const line = `Tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}

module.exports = ClosingLineReporter;
