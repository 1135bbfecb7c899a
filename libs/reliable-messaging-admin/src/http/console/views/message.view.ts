import { type DeadLetter, headerDate } from 'nestjs-reliable-messaging/operations';
import { claimedQueueWarning } from '../../../dead-letter/claimed-queue-warning';
import { describeDeadLetter } from '../../../dead-letter/dead-letter-view';
import { html, type SafeHtml } from '../html';
import { factItems, query, when } from './format';
import { csrfField, notice, type PageFrame } from './layout.view';

/** One dead letter in full: what it is, its failure history with the stack, its headers and body. */
export function messageView(frame: PageFrame, deadLetter: DeadLetter): SafeHtml {
  const view = describeDeadLetter(deadLetter, true);
  const id = deadLetter.messageId ?? '';
  const selection = query({ queue: deadLetter.queue, id });
  const headers = Object.entries((view.headers ?? {}) as Record<string, unknown>).map(
    ([name, value]) =>
      html`<tr>
        <td class="mono">${name}</td>
        <td class="mono">${typeof value === 'string' ? value : JSON.stringify(value)}</td>
      </tr>`,
  );
  const facts: Array<[string, unknown]> = [
    ['Message id', deadLetter.messageId],
    ['Type', deadLetter.type],
    ['Queue', deadLetter.queue],
    ['Dead-letter queue', deadLetter.deadLetterQueue],
    ['Claimed queue (not trusted)', deadLetter.claimedQueue],
    ['Reason', deadLetter.reason],
    ['Error', [deadLetter.errorClass, deadLetter.errorMessage].filter(Boolean).join(': ')],
    ['Handler', deadLetter.handler],
    ['Host', deadLetter.host],
    [
      'Published to',
      deadLetter.exchange ? `${deadLetter.exchange} / ${deadLetter.routingKey ?? ''}` : undefined,
    ],
    ['Idempotency key', deadLetter.idempotencyKey],
    ['Correlation id', deadLetter.correlationId],
    ['Content type', deadLetter.contentType],
  ];
  const warning = claimedQueueWarning(deadLetter);
  const actions = frame.readOnly
    ? ''
    : html`<a
          class="button primary"
          href="${frame.base}/messages/${encodeURIComponent(deadLetter.queue)}/${encodeURIComponent(id)}/edit"
          >Edit body and replay…</a
        >
        <a class="button" href="${frame.base}/replay${selection}">Replay…</a>
        <a class="button" href="${frame.base}/purge${selection}">Purge…</a>`;
  return html` ${warning ? notice('error', `Warning: ${warning}.`) : ''}
    <div class="actions">
      ${actions}
      <a href="${frame.base}/messages${query({ queue: deadLetter.queue })}">Back to the list</a>
    </div>
    <dl class="facts">${factItems(facts)}</dl>
    <h2>Failure history</h2>
    ${historyTable(deadLetter)}
    ${
      deadLetter.errorStack
        ? html`<h2>Stack</h2>
            <pre id="stack">${deadLetter.errorStack}</pre>`
        : ''
    }
    <div class="columns">
      <div>
        <h2>
          Body
          <span class="muted"
            >(${String(view.bodyEncoding)}${view.bodyFromClaimCheck ? ', from the claim-check store' : ''})</span
          >
        </h2>
        ${typeof view.bodyNote === 'string' ? html`<p class="muted" id="body-note">${view.bodyNote}</p>` : ''}
        <pre id="body">${bodyText(view)}</pre>
      </div>
      <div>
        <h2>Headers</h2>
        <table id="headers">
          <thead>
            <tr>
              <th>Header</th>
              <th>Value</th>
            </tr>
          </thead>
          <tbody>
            ${headers}
          </tbody>
        </table>
      </div>
    </div>`;
}

/** The edit form: the body as JSON, checked against the consumer's message class before it can be replayed. */
export function editView(
  frame: PageFrame,
  deadLetter: DeadLetter,
  body: string,
  note: string,
  outcome?: { kind: 'ok' | 'error'; text: string },
): SafeHtml {
  const id = deadLetter.messageId ?? '';
  const self = `${frame.base}/messages/${encodeURIComponent(deadLetter.queue)}/${encodeURIComponent(id)}`;
  return html` <p>
      Dead letter <a class="mono" href="${self}">${id}</a> of <span class="mono">${deadLetter.queue}</span>,
      ${deadLetter.type ?? 'no type'}: ${deadLetter.errorClass ?? deadLetter.reason}. The new body replaces
      the whole message; it is checked as its consumer checks it (JSON, size, the message class's validation)
      before it is replayed.
    </p>
    ${outcome ? notice(outcome.kind, outcome.text) : ''}
    <form class="stacked" method="post" action="${self}/edit">
      ${csrfField(frame)}
      <label>Body (JSON)<textarea name="body" rows="18" spellcheck="false">${body}</textarea></label>
      <label
        >Note for the audit log<input
          name="note"
          value="${note}"
          maxlength="1000"
          placeholder="optional: a ticket, a reason"
      /></label>
      <div class="actions">
        <button type="submit" name="action" value="check">Check</button>
        <button type="submit" name="action" value="replay" class="primary">Check and replay</button>
        <a href="${self}">Cancel</a>
      </div>
    </form>`;
}

/** The body as an editor starts from: pretty JSON when it is JSON. */
export function bodyText(view: Record<string, unknown>): string {
  return view.bodyEncoding === 'json' ? JSON.stringify(view.body, null, 2) : String(view.body);
}

function historyTable(deadLetter: DeadLetter): SafeHtml {
  const events: Array<{ at?: Date; what: string; detail: string }> = [];
  if (deadLetter.firstFailureAt)
    events.push({ at: deadLetter.firstFailureAt, what: 'first failure', detail: '' });
  const deaths = deadLetter.headers['x-death'];
  for (const death of Array.isArray(deaths) ? (deaths as Array<Record<string, unknown>>) : []) {
    const name = (value: unknown) =>
      Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : '';
    events.push({
      at: headerDate(death.time),
      what: 'dead-lettered by the broker',
      detail: `${name(death.reason)} in ${name(death.queue)}, ${typeof death.count === 'number' ? death.count : 1} time(s)`,
    });
  }
  if (deadLetter.replayedAt) events.push({ at: deadLetter.replayedAt, what: 'replayed', detail: '' });
  events.push({
    at: deadLetter.deadLetteredAt,
    what:
      deadLetter.deadLetterCount > 1
        ? `dead-lettered (${deadLetter.deadLetterCount} times in all)`
        : 'dead-lettered',
    detail: `${deadLetter.reason} after ${deadLetter.attempts ?? '?'} attempt(s)${deadLetter.errorClass ? `: ${deadLetter.errorClass}` : ''}${deadLetter.errorMessage ? `: ${deadLetter.errorMessage}` : ''}`,
  });
  events.sort((a, b) => (a.at?.getTime() ?? Infinity) - (b.at?.getTime() ?? Infinity));
  return html`<table id="history">
    <thead>
      <tr>
        <th>When</th>
        <th>What</th>
        <th>Detail</th>
      </tr>
    </thead>
    <tbody>
      ${events.map(
        (event) =>
          html`<tr>
            <td>${when(event.at)}<br /><span class="muted mono">${event.at?.toISOString() ?? ''}</span></td>
            <td>${event.what}</td>
            <td class="error">${event.detail}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}
