import type { SagaInstanceSummary } from 'nestjs-reliable-messaging';
import type { SagaInstanceDetail } from '../../../saga/saga-operation';
import { html, type SafeHtml } from '../html';
import { count, factItems, filterInputs, query, when } from './format';
import { notice, type PageFrame } from './layout.view';

/** The instance filters as the page's query string gives them. */
export type SagaFilterFields = Partial<Record<'saga' | 'status' | 'after' | 'limit', string>>;

const FILTERS: Array<[keyof SagaFilterFields, string, string]> = [
  ['saga', 'Saga', 'its name, as @Saga({ name }) gives it'],
  ['status', 'Status', 'active or completed'],
  ['limit', 'Limit', 'at most'],
];

/** What a list of instances found. */
export interface SagasPage {
  filter: SagaFilterFields;
  instances: SagaInstanceSummary[];
  more: boolean;
  next?: string;
  error?: string;
}

/** The path of one instance's page. */
export function instancePath(frame: PageFrame, sagaName: string, correlationKey: string): string {
  return `${frame.base}/sagas/${encodeURIComponent(sagaName)}/instances/${encodeURIComponent(correlationKey)}`;
}

/** The filter form and the instances of one saga, each linking to its page. */
export function sagasView(frame: PageFrame, page: SagasPage): SafeHtml {
  const base = `${frame.base}/sagas`;
  const { after: _after, ...filter } = page.filter;
  const now = Date.now();
  const rows = page.instances.map(
    (instance) =>
      html`<tr>
        <td class="mono">
          <a href="${instancePath(frame, instance.sagaName, instance.correlationKey)}"
            >${instance.correlationKey}</a
          >
        </td>
        <td>${instance.status}</td>
        <td class="num">${count(instance.version)}</td>
        <td class="num">${count(instance.pendingTimeouts)}</td>
        <td>${when(new Date(instance.updatedAt), now)}</td>
        <td>${when(instance.completedAt ? new Date(instance.completedAt) : undefined, now)}</td>
      </tr>`,
  );
  const table = page.filter.saga
    ? html`<p id="sagas-summary">
          ${count(page.instances.length)} instance(s) in correlation-key order.
          ${page.more ? html`<a href="${base}${query({ ...filter, after: page.next })}">Next page</a>` : ''}
        </p>
        <table id="saga-instances">
          <thead>
            <tr>
              <th>Correlation key</th>
              <th>Status</th>
              <th class="num">Version</th>
              <th class="num">Timeouts</th>
              <th>Updated</th>
              <th>Completed</th>
            </tr>
          </thead>
          <tbody>
            ${
              rows.length > 0
                ? rows
                : html`<tr>
                    <td colspan="6" class="none">No instance matches.</td>
                  </tr>`
            }
          </tbody>
        </table>`
    : html`<p class="muted">Name a saga to list its instances.</p>`;
  return html` <form class="filters" method="get" action="${base}">
      ${filterInputs(FILTERS, filter)}
      <div class="buttons">
        <button type="submit" class="primary">List</button><a class="button" href="${base}">Clear</a>
      </div>
    </form>
    ${page.error ? notice('error', page.error) : ''} ${table}`;
}

/** One instance: its facts, its state (cut past its limit), the timeouts it waits for, and its history. */
export function sagaInstanceView(frame: PageFrame, instance: SagaInstanceDetail): SafeHtml {
  const facts: Array<[string, unknown]> = [
    ['Saga', instance.sagaName],
    ['Correlation key', instance.correlationKey],
    ['Status', instance.status],
    ['Version', String(instance.version)],
    ['State', `${count(instance.stateBytes)} bytes`],
  ];
  const timeouts = instance.pendingTimeouts.map(
    (timeout) =>
      html`<tr>
        <td class="mono">${timeout.dueAt}</td>
        <td class="mono">${timeout.messageId}</td>
      </tr>`,
  );
  const history = instance.history.map(
    (entry) =>
      html`<tr>
        <td>${when(new Date(entry.handledAt))}</td>
        <td class="num">${count(entry.version)}</td>
        <td>${entry.outcome}</td>
        <td class="mono">${entry.messageType}</td>
        <td class="mono">${entry.messageId}</td>
        <td class="mono">${entry.step}</td>
      </tr>`,
  );
  return html` <div class="actions">
      <a href="${frame.base}/sagas${query({ saga: instance.sagaName })}">Back to the list</a>
    </div>
    <dl class="facts">
      ${factItems(facts)}
      <dt>Started</dt>
      <dd>${when(instance.createdAt)} <span class="muted mono">${instance.createdAt.toISOString()}</span></dd>
      <dt>Updated</dt>
      <dd>${when(instance.updatedAt)} <span class="muted mono">${instance.updatedAt.toISOString()}</span></dd>
      <dt>Completed</dt>
      <dd>${when(instance.completedAt ?? undefined)}</dd>
    </dl>
    <h2>State</h2>
    ${
      instance.stateTruncated
        ? notice(
            'info',
            `The state is ${count(instance.stateBytes)} bytes of JSON: only its first ${count(instance.state.length)} characters are shown.`,
          )
        : ''
    }
    <pre id="state">${instance.state}</pre>
    <h2>Pending timeouts</h2>
    <table id="pending-timeouts">
      <thead>
        <tr>
          <th>Due</th>
          <th>Message id</th>
        </tr>
      </thead>
      <tbody>
        ${
          timeouts.length > 0
            ? timeouts
            : html`<tr>
                <td colspan="2" class="none">None.</td>
              </tr>`
        }
      </tbody>
    </table>
    <h2>History, newest first</h2>
    ${instance.historyMore ? html`<p class="muted">Older entries are not shown.</p>` : ''}
    <table id="saga-history">
      <thead>
        <tr>
          <th>Handled</th>
          <th class="num">Version</th>
          <th>Outcome</th>
          <th>Type</th>
          <th>Message id</th>
          <th>Step</th>
        </tr>
      </thead>
      <tbody>
        ${history}
      </tbody>
    </table>`;
}
