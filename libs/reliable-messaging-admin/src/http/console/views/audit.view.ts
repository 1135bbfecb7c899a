import type { DeadLetterAuditRecord } from '../../../audit/dead-letter-audit.service';
import { html, type SafeHtml } from '../html';
import { count, when } from './format';
import { notice, type PageFrame } from './layout.view';

/** Whether the action is on parked outbox rows (`outbox-retry`, `outbox-discard`) rather than dead letters. */
function isOutboxAction(action: string): boolean {
  return action.startsWith('outbox-');
}

/** The latest audit records, newest first; the one just written highlighted, with what it did. */
export function auditView(frame: PageFrame, records: DeadLetterAuditRecord[], highlight?: string): SafeHtml {
  const done = records.find((record) => record.id === highlight);
  const rows = records.map((record) => {
    const note = typeof record.details.note === 'string' ? record.details.note : '';
    const failures = Array.isArray(record.details.failures) ? record.details.failures.length : 0;
    return html`<tr class="${record.id === highlight ? 'highlight' : ''}" data-audit-id="${record.id}">
      <td>${when(record.startedAt)}</td>
      <td>${record.action}</td>
      <td class="mono">${record.actor}</td>
      <td class="mono">
        ${record.queue ?? (isOutboxAction(record.action) ? html`<span class="none">outbox</span>` : '–')}
      </td>
      <td class="num">${count(record.messageCount)}</td>
      <td>${record.outcome}${failures > 0 ? html` <span class="nonzero">${failures} failed</span>` : ''}</td>
      <td class="mono error">${JSON.stringify(record.selection)}</td>
      <td class="error">${note}</td>
    </tr>`;
  });
  const noun = (action: string) => (isOutboxAction(action) ? 'parked outbox row(s)' : 'dead letter(s)');
  return html` ${done ? notice(done.outcome === 'completed' ? 'ok' : 'error', `${done.action}: ${done.messageCount} ${noun(done.action)}, ${done.outcome}.`) : ''}
    <table id="audit">
      <thead>
        <tr>
          <th>Started</th>
          <th>Action</th>
          <th>Actor</th>
          <th>Queue</th>
          <th class="num">Messages</th>
          <th>Outcome</th>
          <th>Selection</th>
          <th>Note</th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length > 0
            ? rows
            : html`<tr>
                <td colspan="8" class="none">
                  Nothing has been replayed, edited, purged, retried or discarded yet.
                </td>
              </tr>`
        }
      </tbody>
    </table>`;
}
