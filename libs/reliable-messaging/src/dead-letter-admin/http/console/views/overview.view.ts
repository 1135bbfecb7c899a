import { html, type SafeHtml } from '../html';
import type { ConsoleOverview } from '../console-figures';
import { age, count, query } from './format';
import type { PageFrame } from './layout.view';

function oldest(seconds: number | null | undefined, unmeasured: string): SafeHtml {
  if (seconds === undefined) return html`<span class="none" title="${unmeasured}">–</span>`;
  return seconds === null ? html`<span class="none">empty</span>` : html`${age(seconds)}`;
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
        <td class="num">${oldest(queue.oldestAgeSeconds, 'not measured in this version')}</td>
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
          }${queue.depth !== undefined && queue.reasonsCounted < queue.depth ? html` <span class="muted">(of the oldest ${count(queue.reasonsCounted)})</span>` : ''}
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
    </div>
    <p class="muted">Read ${overview.readAt.toISOString()}. Reload for new figures.</p>
    <h2>Consumer queues</h2>
    <table id="consumer-queues">
      <thead>
        <tr>
          <th>Queue</th>
          <th class="num">Ready</th>
          <th class="num">Consumers</th>
          <th class="num">Oldest message</th>
          <th class="num">Dead letters</th>
        </tr>
      </thead>
      <tbody>
        ${
          consumerRows.length > 0
            ? consumerRows
            : html`<tr>
                <td colspan="5" class="none">This app has no consumers.</td>
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
