/**
 * Ends a Jest run with one plain line, `Tests: N passed, N failed, N skipped`, which CI reads to tell a run
 * that tested something from one that ran nothing. Printed at exit, after Jest's own summary.
 */
class ClosingLineReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const line = `Tests: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}

module.exports = ClosingLineReporter;
