import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { parser } from '@prometheus-io/lezer-promql';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { Consume, MessageType } from 'nestjs-reliable-messaging';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';

const DEPLOY = join(process.cwd(), 'deploy');
const read = (path: string) => readFileSync(join(DEPLOY, path), 'utf8');

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
type RuleGroups = { groups: Array<{ name: string; rules: AlertRule[] }> };

/** The parts of a Deployment this spec reads. */
interface DeploymentSpec {
  template: {
    metadata: { annotations: Record<string, string> };
    spec: {
      terminationGracePeriodSeconds: number;
      containers: Array<{
        lifecycle: { preStop: { exec: { command: string[] } } };
        livenessProbe: { httpGet: { path: string } };
        readinessProbe: { httpGet: { path: string } };
      }>;
    };
  };
}

/** The metric names a PromQL expression selects; throws when the expression does not parse. */
function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names: string[] = [];
  const errors: number[] = [];
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.push(expr.slice(identifier.from, identifier.to));
      }
    },
  });
  if (errors.length > 0) throw new Error(`PromQL does not parse at offset ${errors[0]}: ${expr}`);
  return names;
}

/** A series name as exported: a histogram's `_bucket`, `_sum` and `_count` series belong to the histogram. */
const familyOf = (name: string, families: Set<string>) =>
  families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');

@MessageType({ type: 'assets.checked', idempotencyKey: (m: AssetsChecked) => m.id })
class AssetsChecked {
  @IsString() id!: string;
}

@Injectable()
class AssetsConsumer {
  @Consume({ queue: uniqueQueue('assets') })
  async onChecked(_event: AssetsChecked): Promise<void> {}
}

/**
 * The Prometheus rules, the Grafana dashboard and the Kubernetes manifests under deploy/: they parse, and every
 * metric they name is one a running app really exports (scraped from its registry).
 */
describe('observability assets', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: MessagingTestApp;
  const registry = new Registry();
  let exported: Set<string>;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
    app = await MessagingTestApp.start(broker, {
      providers: [AssetsConsumer],
      options: { dataSource: db.dataSource, metricsRegistry: registry },
    });
    const exposition = await registry.metrics();
    exported = new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('exports its metrics under the rm_ prefix only', () => {
    expect(exported.size).toBeGreaterThanOrEqual(20);
    expect([...exported].filter((name) => !name.startsWith('rm_'))).toEqual([]);
  });

  it('ships alert rules that parse, name only exported metrics, and match the PrometheusRule', () => {
    const rules = parseYaml(read('prometheus/alert-rules.yml')) as RuleGroups;
    const operatorRule = parseYaml(read('k8s/prometheus-rule.yaml')) as { kind: string; spec: RuleGroups };
    const all = rules.groups.flatMap((group) => group.rules);

    expect(operatorRule.kind).toBe('PrometheusRule');
    expect(operatorRule.spec).toEqual(rules);
    expect(all.map((rule) => rule.alert)).toEqual(
      expect.arrayContaining([
        'DeadLetterQueueNotEmpty',
        'OutboxBacklogAging',
        'MessagesHandledLate',
        'QueueWithoutConsumer',
      ]),
    );
    for (const rule of all) {
      expect(['warning', 'critical']).toContain(rule.labels.severity);
      expect(rule.annotations.summary).toEqual(expect.any(String));
      const names = metricNames(rule.expr).map((name) => familyOf(name, exported));
      expect({ alert: rule.alert, unknown: names.filter((name) => !exported.has(name)) }).toEqual({
        alert: rule.alert,
        unknown: [],
      });
      expect(names.length).toBeGreaterThan(0);
    }
  });

  it('ships a Grafana dashboard whose every query parses and names only exported metrics', () => {
    const dashboard = JSON.parse(read('grafana/reliable-messaging.dashboard.json')) as {
      uid: string;
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      templating: { list: Array<{ definition?: string }> };
    };
    const queries = [
      ...dashboard.panels.flatMap((panel) =>
        panel.targets.map((target) => ({ where: panel.title, expr: target.expr })),
      ),
      ...dashboard.templating.list
        .filter((variable) => variable.definition)
        .map((variable) => ({
          where: 'variable',
          expr: /label_values\((\w+)/.exec(variable.definition!)![1],
        })),
    ];
    const used = new Set<string>();

    expect(dashboard.uid).toBe('reliable-messaging');
    for (const { where, expr } of queries) {
      const promql = expr.replaceAll('$__rate_interval', '5m');
      const names = metricNames(promql).map((name) => familyOf(name, exported));
      for (const name of names) used.add(name);
      expect({ where, unknown: names.filter((name) => !exported.has(name)) }).toEqual({ where, unknown: [] });
    }
    expect(used.size).toBeGreaterThanOrEqual(15);
  });

  it('ships a Deployment whose probes use the health endpoints and whose grace period covers the shutdown deadline', () => {
    const documents = parseAllDocuments(read('k8s/deployment.yaml')).map(
      (document) => document.toJS() as { kind: string; spec: DeploymentSpec },
    );
    const deployment = documents.find((document) => document.kind === 'Deployment')!;
    const pod = deployment.spec.template;
    const [container] = pod.spec.containers;
    const preStopSeconds = Number(container.lifecycle.preStop.exec.command[1]);
    const monitor = parseYaml(read('k8s/service-monitor.yaml')) as {
      spec: { endpoints: Array<{ path: string }> };
    };
    const kustomization = parseYaml(read('k8s/kustomization.yaml')) as { resources: string[] };

    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      preStopSeconds * 1000 + DEFAULT_SHUTDOWN_TIMEOUT_MS + 5_000,
    );
    expect(pod.metadata.annotations['prometheus.io/path']).toBe('/metrics');
    expect(monitor.spec.endpoints.map((endpoint) => endpoint.path)).toEqual(['/metrics']);
    expect(documents.map((document) => document.kind)).toEqual(['Deployment', 'Service']);
    expect(kustomization.resources).toEqual([
      'deployment.yaml',
      'service-monitor.yaml',
      'prometheus-rule.yaml',
    ]);
  });
});
