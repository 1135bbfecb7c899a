import type { ScheduledRow } from 'nestjs-reliable-messaging';
import { html, type SafeHtml } from '../html';
import { count, filterInputs, query } from './format';
import { notice, type PageFrame } from './layout.view';

/** The scheduled-message filters as the page's query string gives them. */
export type ScheduledFilterFields = Partial<Record<'type' | 'dueBefore' | 'after' | 'limit', string>>;

/** The filter fields, in the order of the form, with their labels and hints. */
const FILTERS: Array<[keyof ScheduledFilterFields, string, string]> = [
  ['type', 'Message type', 'e.g. order.reminder'],
  ['dueBefore', 'Due before', 'ISO time or ahead: 30m, 2h, 7d'],
  ['limit', 'Limit', 'at most'],
];

/** What a list of scheduled messages found. */
export interface ScheduledPage {
  filter: ScheduledFilterFields;
  rows: ScheduledRow[];
  more: boolean;
  next?: string;
  maxBatchSize: number;
  error?: string;
}

/** A due time as `in 5m` (or `overdue 2s`), the ISO time beside it. */
function due(date: Date, now: number): SafeHtml {
  const seconds = Math.round((date.getTime() - now) / 1000);
  const iso = date.toISOString();
  return html`<time datetime="${iso}" title="${iso}"
      >${seconds >= 0 ? `in ${seconds}s` : `overdue ${-seconds}s`}</time
    >
    <span class="muted mono">${iso}</span>`;
}

/** The filter form, the waiting messages in delivery order, and a cancel link for each. */
export function scheduledView(frame: PageFrame, page: ScheduledPage): SafeHtml {
  const base = `${frame.base}/scheduled`;
  const { after: _after, ...filter } = page.filter;
  const now = Date.now();
  const rows = page.rows.map(
    (row) =>
      html`<tr data-message-id="${row.messageId}">
        <td>${due(row.deliverAt, now)}</td>
        <td class="mono">${row.type ?? '–'}</td>
        <td class="mono">${row.messageId}</td>
        <td class="mono">${row.idempotencyKey}</td>
        <td class="mono">${row.exchange} / ${row.routingKey}</td>
        <td class="mono">${row.orderingKey ?? html`<span class="none">none</span>`}</td>
        <td ${frame.readOnly ? 'hidden' : ''}>
          <a class="button" href="${base}/cancel${query({ messageId: row.messageId })}">Cancel…</a>
        </td>
      </tr>`,
  );
  return html` <form class="filters" method="get" action="${base}">
      ${filterInputs(FILTERS, filter)}
      <div class="buttons">
        <button type="submit" class="primary">Filter</button><a class="button" href="${base}">Clear</a>
      </div>
    </form>
    ${page.error ? notice('error', page.error) : ''}
    <p id="scheduled-summary">
      ${count(page.rows.length)} scheduled message(s), the first due first.
      ${page.more ? html`<a href="${base}${query({ ...filter, after: page.next })}">Next page</a>` : ''} A
      message published with a delivery time waits here until it is due, then enters the outbox; cancelling it
      deletes it before that.
    </p>
    <table id="scheduled-rows">
      <thead>
        <tr>
          <th>Due</th>
          <th>Type</th>
          <th>Message id</th>
          <th>Idempotency key</th>
          <th>Published to</th>
          <th>Ordering key</th>
          <th ${frame.readOnly ? 'hidden' : ''}></th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length > 0
            ? rows
            : html`<tr>
                <td colspan="7" class="none">No scheduled message matches.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}
