import { html, type SafeHtml } from '../html';
import type { ConsoleOverview } from '../console-figures';
import { age, bytes, count, query } from './format';
import type { PageFrame } from './layout.view';

function oldest(seconds: number | null | undefined, unmeasured: string): SafeHtml {
  if (seconds === undefined) return html`<span class="none" title="${unmeasured}">–</span>`;
  return seconds === null ? html`<span class="none">empty</span>` : html`${age(seconds)}`;
}

/** Deliveries a minute: whole numbers from 10 up, one decimal below; `–` before a second overview. */
function perMinute(rate: number | undefined): SafeHtml {
  if (rate === undefined)
    return html`<span class="none" title="known from the second overview on: reload">–</span>`;
  return html`${rate >= 10 || rate === 0 ? count(Math.round(rate)) : rate.toFixed(1)}`;
}

/** The parked outbox rows tile, when the app has an outbox. */
function parkedTile(frame: PageFrame, parked: ConsoleOverview['parkedOutboxRows']): SafeHtml | '' {
  if (parked === undefined) return '';
  if (typeof parked === 'object')
    return html`<div class="tile alert" title="${parked.error}">
      <div class="value" data-figure="parked-outbox-rows">?</div>
      <div class="label">parked outbox rows (unreadable)</div>
    </div>`;
  return html`<div class="tile ${parked > 0 ? 'alert' : ''}">
    <div class="value" data-figure="parked-outbox-rows">
      ${parked > 0 ? html`<a class="nonzero" href="${frame.base}/outbox">${count(parked)}</a>` : count(parked)}
    </div>
    <div class="label">parked outbox rows</div>
  </div>`;
}

/** Every consumer queue and every dead-letter queue, with their figures. */
export function overviewView(frame: PageFrame, overview: ConsoleOverview): SafeHtml {
  const messages = `${frame.base}/messages`;
  const total = overview.deadLetterQueues.reduce((sum, queue) => sum + (queue.depth ?? 0), 0);
  const ages = overview.deadLetterQueues.map((queue) => queue.oldestAgeSeconds ?? -1);
  const oldestOfAll = Math.max(-1, ...ages);
  const deadByQueue = new Map(overview.deadLetterQueues.map((queue) => [queue.queue, queue.depth]));
  const consumerRows = overview.consumerQueues.map(
    (queue) =>
      html`<tr>
        <td class="mono">${queue.queue}</td>
        <td class="num">
          ${queue.ready === undefined ? html`<span class="none" title="the queue does not exist">missing</span>` : count(queue.ready)}
        </td>
        <td class="num">${count(queue.consumers)}</td>
        <td class="num">${count(queue.inFlight)}</td>
        <td class="num">${perMinute(queue.handledPerMinute)}</td>
        <td class="num">${oldest(queue.oldestAgeSeconds, 'the queue does not exist')}</td>
        <td class="num">${deadLetterLink(messages, queue.queue, deadByQueue.get(queue.queue))}</td>
      </tr>`,
  );
  const deadLetterRows = overview.deadLetterQueues.map(
    (queue) =>
      html`<tr>
        <td class="mono">${queue.deadLetterQueue}</td>
        <td class="num">
          ${queue.error ? html`<span class="nonzero">unreadable</span>` : deadLetterLink(messages, queue.queue, queue.depth)}
        </td>
        <td class="num">${queue.error ? '' : oldest(queue.oldestAgeSeconds, '')}</td>
        <td>
          ${
            queue.error ??
            queue.reasons.map(
              (reason) =>
                html`<a class="chip" href="${messages}${query({ queue: queue.queue, reason: reason.reason })}"
                  >${reason.reason} <b>${count(reason.count)}</b></a
                >`,
            )
          }${queue.depth !== undefined && queue.reasonsCounted < queue.depth ? html` <span class="muted">(of the oldest ${count(queue.reasonsCounted)}${queue.stoppedAtReadBudget ? html`: the count stopped at the read budget of ${bytes(queue.stoppedAtReadBudget)}` : ''})</span>` : ''}
        </td>
      </tr>`,
  );
  return html` <div class="tiles">
      <div class="tile ${total > 0 ? 'alert' : ''}">
        <div class="value" data-figure="dead-letters">${count(total)}</div>
        <div class="label">dead letters</div>
      </div>
      <div class="tile">
        <div class="value">${oldestOfAll < 0 ? '–' : age(oldestOfAll)}</div>
        <div class="label">oldest dead letter</div>
      </div>
      <div class="tile">
        <div class="value">${count(overview.consumerQueues.length)}</div>
        <div class="label">consumer queues</div>
      </div>
      ${parkedTile(frame, overview.parkedOutboxRows)}
    </div>
    <p class="muted">Read ${overview.readAt.toISOString()}. Reload for new figures.</p>
    <h2>Consumer queues</h2>
    <table id="consumer-queues">
      <thead>
        <tr>
          <th>Queue</th>
          <th class="num">Ready</th>
          <th class="num">Consumers</th>
          <th class="num" title="handlers of this process running now">In flight</th>
          <th class="num" title="deliveries this process finished a minute, since the previous overview">
            Handled / min
          </th>
          <th class="num" title="estimated age of the oldest message, ready or held (docs/operations.md)">
            Oldest message
          </th>
          <th class="num">Dead letters</th>
        </tr>
      </thead>
      <tbody>
        ${
          consumerRows.length > 0
            ? consumerRows
            : html`<tr>
                <td colspan="7" class="none">This app has no consumers.</td>
              </tr>`
        }
      </tbody>
    </table>
    <h2>Dead-letter queues</h2>
    <table id="dead-letter-queues">
      <thead>
        <tr>
          <th>Dead-letter queue</th>
          <th class="num">Dead letters</th>
          <th class="num">Oldest</th>
          <th>By reason</th>
        </tr>
      </thead>
      <tbody>
        ${deadLetterRows}
      </tbody>
    </table>`;
}

function deadLetterLink(messages: string, queue: string, depth: number | undefined): SafeHtml {
  if (depth === undefined) return html`<span class="none">–</span>`;
  if (depth === 0) return html`<span class="none">0</span>`;
  return html`<a class="nonzero" href="${messages}${query({ queue })}">${count(depth)}</a>`;
}
