/**
 * Ends a Jest run with one plain line, `Tests: N passed, N failed, N skipped`, which CI reads to tell a run
 * that tested something from one that ran nothing. Printed at exit, after Jest's own summary.
 *
 * Jest's `forceExit` is off: a spec that leaves a connection, a timer or a child process open keeps the run
 * from ending, so a leak shows up as a hung run here rather than in production.
 */
class ClosingLineReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const line = `Tests: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}

module.exports = ClosingLineReporter;
