import { describe, expect, it } from '@jest/globals';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';

const run = promisify(execFile);
const RULES_DIR = join(process.cwd(), 'deploy', 'prometheus');
const RULE_TESTS = 'alert-rules.test.yml';

interface RuleTests {
  rule_files: string[];
  tests: Array<{
    name: string;
    alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }>;
  }>;
}

/** Whether `promtool` (Debian's `prometheus` package) is on the PATH. */
const promtoolInstalled = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;

/** The names of the rule tests promtool reports as failed, read from its output. */
function failedTests(output: string): string[] {
  return [...output.matchAll(/^\s*name: (.+?),?$/gm)].map((match) => match[1]);
}

/**
 * The alert rules of deploy/prometheus/alert-rules.yml under `promtool test rules`: synthetic series in, the
 * alerts expected out (deploy/prometheus/alert-rules.test.yml). Every alert rule must have a case in which it
 * fires and one in which it must not.
 */
describe('alert rules', () => {
  const rules = parseYaml(readFileSync(join(RULES_DIR, 'alert-rules.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string }> }>;
  };
  const alerts = rules.groups.flatMap((group) => group.rules.map((rule) => rule.alert));
  const tests = parseYaml(readFileSync(join(RULES_DIR, RULE_TESTS), 'utf8')) as RuleTests;
  const cases = tests.tests.flatMap((test) => test.alert_rule_test ?? []);

  it('test the rule file that ships', () => {
    expect(tests.rule_files).toEqual(['alert-rules.yml']);
  });

  it.each(alerts)('has a case in which %s fires and one in which it must not', (alert) => {
    const mine = cases.filter((test) => test.alertname === alert);
    expect({ alert, fires: mine.some((test) => (test.exp_alerts ?? []).length > 0) }).toEqual({
      alert,
      fires: true,
    });
    expect({ alert, staysQuiet: mine.some((test) => (test.exp_alerts ?? []).length === 0) }).toEqual({
      alert,
      staysQuiet: true,
    });
  });

  it('pass promtool test rules', async () => {
    if (!promtoolInstalled) {
      throw new Error(
        "promtool is not installed: install Debian's prometheus package (apt-get install prometheus; npm test does as root)",
      );
    }
    try {
      await run('promtool', ['test', 'rules', RULE_TESTS], { cwd: RULES_DIR, timeout: 60_000 });
    } catch (error) {
      const output = `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`;
      const failed = failedTests(output);
      throw new Error(
        `promtool test rules ${RULE_TESTS} failed` +
          (failed.length > 0 ? ` in: ${failed.join('; ')}` : '') +
          `\n${output || String(error)}`,
        { cause: error },
      );
    }
  });
});
