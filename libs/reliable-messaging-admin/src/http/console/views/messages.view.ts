import type { DeadLetterSummary } from '../../../dead-letter/dead-letter-summary';
import { html, type SafeHtml } from '../html';
import { bytes, count, filterInputs, query, when } from './format';
import { notice, type PageFrame } from './layout.view';

/** The list filters as the page's query string gives them, the CLI's filters by their API names. */
export type FilterFields = Partial<
  Record<
    'queue' | 'messageIds' | 'errorClass' | 'type' | 'reason' | 'since' | 'until' | 'text' | 'limit',
    string
  >
>;

/** The filter fields, in the order of the form, with their labels and hints. */
const FILTERS: Array<[keyof FilterFields, string, string]> = [
  ['messageIds', 'Message ids', 'comma-separated'],
  ['errorClass', 'Error class', 'e.g. PaymentDeclined'],
  ['type', 'Message type', 'e.g. order.placed'],
  ['reason', 'Reason', 'e.g. attempts-exhausted'],
  ['since', 'Since', 'ISO time or age: 30m, 2h, 7d'],
  ['until', 'Until', 'ISO time or age'],
  ['text', 'Text', 'in the body or the error'],
  ['limit', 'Limit', 'at most'],
];

/** What a list found. */
export interface MessagesPage {
  queues: string[];
  filter: FilterFields;
  deadLetters: DeadLetterSummary[];
  scanned: number;
  more: boolean;
  /** The read stopped at the read budget, `maxReadBytes`. */
  stoppedAtReadBudget: boolean;
  maxBatchSize: number;
  maxReadBytes: number;
  error?: string;
}

/** The filter form, the matching dead letters, and the forms that replay or purge them. */
export function messagesView(frame: PageFrame, page: MessagesPage): SafeHtml {
  const { filter } = page;
  const queueOptions = page.queues.map(
    (queue) =>
      html`<option value="${queue}" ${filter.queue === queue ? html` selected` : ''}>${queue}</option>`,
  );
  const inputs = filterInputs(FILTERS, filter);
  const rows = page.deadLetters.map(
    (deadLetter) =>
      html`<tr>
        <td>
          <input
            type="checkbox"
            name="id"
            value="${deadLetter.messageId ?? ''}"
            aria-label="select ${deadLetter.messageId ?? ''}"
            ${deadLetter.messageId ? '' : html` disabled`}
          />
        </td>
        <td>${when(deadLetter.deadLetteredAt)}</td>
        <td class="mono">
          ${deadLetter.queue}${deadLetter.claimedQueue !== undefined ? html` <span class="nonzero" title="its header claims ${deadLetter.claimedQueue}">(claims ${deadLetter.claimedQueue})</span>` : ''}
        </td>
        <td class="mono">
          ${deadLetter.messageId ? html`<a href="${frame.base}/messages/${encodeURIComponent(deadLetter.queue)}/${encodeURIComponent(deadLetter.messageId)}">${deadLetter.messageId}</a>` : html`<span class="none">none</span>`}
        </td>
        <td class="mono">${deadLetter.type ?? '–'}</td>
        <td>${deadLetter.reason}</td>
        <td class="error">
          <b>${deadLetter.errorClass ?? ''}</b
          >${deadLetter.errorMessage ? html` ${truncate(deadLetter.errorMessage, 160)}` : ''}
        </td>
        <td class="num">${deadLetter.attempts ?? '–'}</td>
      </tr>`,
  );
  const filterQuery = { ...filter, limit: undefined };
  const narrows = Object.entries(filter).some(([key, value]) => key !== 'queue' && key !== 'limit' && value);
  const everyMatch = query({ ...filterQuery, ...(narrows ? {} : { all: '1' }) });
  return html` <form class="filters" method="get" action="${frame.base}/messages">
      <label
        >Queue<select name="queue">
          <option value="">every dead-letter queue</option>
          ${queueOptions}
        </select></label
      >
      ${inputs}
      <div class="buttons">
        <button type="submit" class="primary">Filter</button
        ><a class="button" href="${frame.base}/messages">Clear</a>
      </div>
    </form>
    ${page.error ? notice('error', page.error) : ''}
    <p id="list-summary">
      ${count(page.deadLetters.length)} dead letter(s), oldest first; ${count(page.scanned)}
      read${
        page.stoppedAtReadBudget
          ? html` — <b>read budget reached</b>: the read stopped after ${bytes(page.maxReadBytes)}; more may
              match (narrow the filter)`
          : page.more
            ? html` — <b>limit reached</b>: more may match (at most ${count(page.maxBatchSize)} a page; narrow
                the filter)`
            : ''
      }.
    </p>
    <form method="get" action="${frame.base}/replay">
      ${filter.queue ? html`<input type="hidden" name="queue" value="${filter.queue}" />` : ''}
      <div class="actions" ${frame.readOnly ? 'hidden' : ''}>
        <button type="submit" class="primary">Replay selected…</button>
        <button type="submit" formaction="${frame.base}/purge">Purge selected…</button>
        <span class="muted">or every match of the filter:</span>
        <a class="button" href="${frame.base}/replay${everyMatch}">Replay every match…</a>
        <a class="button" href="${frame.base}/purge${everyMatch}">Purge every match…</a>
      </div>
      <table id="dead-letters">
        <thead>
          <tr>
            <th></th>
            <th>Dead-lettered</th>
            <th>Queue</th>
            <th>Message id</th>
            <th>Type</th>
            <th>Reason</th>
            <th>Error</th>
            <th class="num">Attempts</th>
          </tr>
        </thead>
        <tbody>
          ${
            rows.length > 0
              ? rows
              : html`<tr>
                  <td colspan="8" class="none">No dead letter matches.</td>
                </tr>`
          }
        </tbody>
      </table>
    </form>`;
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}
