import type { ParkedOutboxRow, ParkedOutboxRowDetail } from '../../../outbox/outbox-operation';
import { html, type SafeHtml } from '../html';
import { count, factItems, filterInputs, query, when } from './format';
import { notice, type PageFrame } from './layout.view';

/** The parked-row filters as the page's query string gives them, the CLI's filters by their API names. */
export type OutboxFilterFields = Partial<
  Record<'type' | 'orderingKey' | 'since' | 'until' | 'text' | 'limit', string>
>;

/** The filter fields, in the order of the form, with their labels and hints. */
const FILTERS: Array<[keyof OutboxFilterFields, string, string]> = [
  ['type', 'Message type', 'e.g. order.placed'],
  ['orderingKey', 'Ordering key', 'exactly'],
  ['since', 'Parked since', 'ISO time or age: 30m, 2h, 7d'],
  ['until', 'Parked until', 'ISO time or age'],
  ['text', 'Text', 'in the body or the reason'],
  ['limit', 'Limit', 'at most'],
];

/** What a list of parked rows found. */
export interface OutboxPage {
  filter: OutboxFilterFields;
  rows: ParkedOutboxRow[];
  more: boolean;
  maxBatchSize: number;
  error?: string;
}

/** How a parked row holds back its ordering key, or nothing when it holds back no row. */
export function holdingBack(row: ParkedOutboxRow): SafeHtml | '' {
  if (row.holdingBack === 0 || row.orderingKey === null) return '';
  return html`<span class="nonzero holding-back"
    >holding back ${count(row.holdingBack)} later row(s) of key
    <span class="mono">${row.orderingKey}</span></span
  >`;
}

/** The filter form, the parked rows, and the forms that retry or discard them. */
export function outboxView(frame: PageFrame, page: OutboxPage): SafeHtml {
  const { filter } = page;
  const base = `${frame.base}/outbox`;
  const inputs = filterInputs(FILTERS, filter);
  const now = Date.now();
  const rows = page.rows.map(
    (row) =>
      html`<tr data-row-id="${row.id}">
        <td><input type="checkbox" name="id" value="${row.id}" aria-label="select row ${row.id}" /></td>
        <td>${when(row.parkedAt ?? undefined, now)}</td>
        <td class="mono">${row.type ?? '–'}</td>
        <td class="mono"><a href="${base}/rows/${encodeURIComponent(row.id)}">${row.messageId}</a></td>
        <td class="mono">
          ${row.orderingKey ?? html`<span class="none">none</span>`}${row.holdingBack > 0 ? html`<br />${holdingBack(row)}` : ''}
        </td>
        <td class="error">${row.reason ?? '–'}</td>
        <td class="num">${count(row.attempts)}</td>
      </tr>`,
  );
  const { limit: _limit, ...filterQuery } = filter;
  const narrows = Object.values(filterQuery).some((value) => value);
  const everyMatch = query({ ...filterQuery, ...(narrows ? {} : { all: '1' }) });
  const held = page.rows.reduce((sum, row) => sum + row.holdingBack, 0);
  return html` <form class="filters" method="get" action="${base}">
      ${inputs}
      <div class="buttons">
        <button type="submit" class="primary">Filter</button><a class="button" href="${base}">Clear</a>
      </div>
    </form>
    ${page.error ? notice('error', page.error) : ''}
    <p id="outbox-summary">
      ${count(page.rows.length)} parked row(s) in row order, holding back ${count(held)} later row(s) of their
      ordering
      keys${page.more ? html` — <b>limit reached</b>: more may match (at most ${count(page.maxBatchSize)} a page; narrow the filter)` : ''}.
      The relay sets a row aside when the broker cannot take it (unroutable, no such exchange, too large);
      retry it once the cause is fixed, or discard it to release the rows behind it.
    </p>
    <form method="get" action="${base}/retry">
      <div class="actions" ${frame.readOnly ? 'hidden' : ''}>
        <button type="submit" class="primary">Retry selected…</button>
        <button type="submit" formaction="${base}/discard">Discard selected…</button>
        <span class="muted">or every match of the filter:</span>
        <a class="button" href="${base}/retry${everyMatch}">Retry every match…</a>
        <a class="button" href="${base}/discard${everyMatch}">Discard every match…</a>
      </div>
      <table id="parked-rows">
        <thead>
          <tr>
            <th></th>
            <th>Parked</th>
            <th>Type</th>
            <th>Message id</th>
            <th>Ordering key</th>
            <th>Reason</th>
            <th class="num">Attempts</th>
          </tr>
        </thead>
        <tbody>
          ${
            rows.length > 0
              ? rows
              : html`<tr>
                  <td colspan="7" class="none">No parked row matches.</td>
                </tr>`
          }
        </tbody>
      </table>
    </form>`;
}

/** One parked row in full: what it is, where it was going, why it was parked, its properties and body. */
export function outboxRowView(frame: PageFrame, row: ParkedOutboxRowDetail): SafeHtml {
  const base = `${frame.base}/outbox`;
  const selection = query({ id: row.id });
  const facts: Array<[string, unknown]> = [
    ['Row', row.id],
    ['Message id', row.messageId],
    ['Type', row.type],
    ['Published to', `${row.exchange} / ${row.routingKey}`],
    ['Ordering key', row.orderingKey ?? undefined],
    ['Reason', row.reason ?? undefined],
    ['Attempts', String(row.attempts)],
    ['Body', `${count(row.bodyBytes)} bytes`],
  ];
  const properties = Object.entries(row.properties as unknown as Record<string, unknown>).map(
    ([name, value]) =>
      html`<tr>
        <td class="mono">${name}</td>
        <td class="mono">${typeof value === 'string' ? value : JSON.stringify(value)}</td>
      </tr>`,
  );
  return html` ${row.holdingBack > 0 ? notice('error', holdingBack(row)) : ''}
    <div class="actions">
      ${
        frame.readOnly
          ? ''
          : html`<a class="button primary" href="${base}/retry${selection}">Retry…</a>
              <a class="button" href="${base}/discard${selection}">Discard…</a>`
      }
      <a href="${base}">Back to the list</a>
    </div>
    <dl class="facts">
      ${factItems(facts)}
      <dt>Written</dt>
      <dd>${when(row.createdAt)} <span class="muted mono">${row.createdAt.toISOString()}</span></dd>
      <dt>Parked</dt>
      <dd>
        ${when(row.parkedAt ?? undefined)}
        <span class="muted mono">${row.parkedAt?.toISOString() ?? ''}</span>
      </dd>
    </dl>
    <div class="columns">
      <div>
        <h2>Body <span class="muted">(${row.bodyEncoding})</span></h2>
        <pre id="body">${row.body}</pre>
      </div>
      <div>
        <h2>Properties</h2>
        <table id="properties">
          <thead>
            <tr>
              <th>Property</th>
              <th>Value</th>
            </tr>
          </thead>
          <tbody>
            ${properties}
          </tbody>
        </table>
      </div>
    </div>`;
}
