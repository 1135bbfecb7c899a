import type { DeadLetterOperationResult } from '../../../dead-letter-operation';
import { html, type SafeHtml } from '../html';
import { count, query } from './format';
import { csrfField, type PageFrame } from './layout.view';

/** A replay or purge as the preview page shows it: the selection's fields, carried into the confirming form. */
export type SelectionFields = Record<string, string | string[] | undefined>;

/**
 * The dry run of a replay or purge: what it would touch, and a form that does it. A purge asks for an
 * explicit confirmation; cancelling goes back to the list and changes nothing.
 */
export function operationPreviewView(
  frame: PageFrame,
  action: 'replay' | 'purge',
  selection: SelectionFields,
  preview: DeadLetterOperationResult,
): SafeHtml {
  const hidden = Object.entries(selection).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value])
      .filter((item): item is string => typeof item === 'string' && item !== '')
      .map((item) => html`<input type="hidden" name="${name}" value="${item}" />`),
  );
  const total = preview.messageIds.length;
  const back = `${frame.base}/messages${query({ queue: typeof selection.queue === 'string' ? selection.queue : undefined })}`;
  const verb = action === 'replay' ? 'replayed' : 'purged (deleted for good)';
  const ids = preview.messageIds.map((id) => html`<li class="mono">${id}</li>`);
  const form =
    total === 0
      ? html`<p><a class="button" href="${back}">Back to the list</a></p>`
      : html`<form class="stacked" method="post" action="${frame.base}/${action}">
          ${csrfField(frame)}${hidden}
          <label
            >Note for the audit log<input
              name="note"
              maxlength="1000"
              placeholder="optional: a ticket, a reason"
          /></label>
          ${
            action === 'purge'
              ? html`<label class="confirm"
                  ><span
                    ><input type="checkbox" name="confirm" value="yes" required /> I understand that these
                    ${count(total)} dead letter(s) are deleted for good</span
                  ></label
                >`
              : ''
          }
          <div class="actions">
            <button type="submit" class="${action === 'purge' ? 'danger' : 'primary'}">
              ${action === 'replay' ? `Replay ${count(total)} now` : `Purge ${count(total)} for good`}
            </button>
            <a class="button" href="${back}">Cancel</a>
          </div>
        </form>`;
  return html` <p class="notice info" id="preview-summary">
      Dry run: <b>${count(total)}</b> dead letter(s) would be
      ${verb}${preview.more ? html`; <b>more match</b> beyond this batch, run it again for the rest` : ''}.
      Nothing has changed yet.
    </p>
    ${preview.failures.length > 0 ? html`<p class="notice error">${preview.failures.map((failure) => `${failure.messageId ?? '?'}: ${failure.error}`).join('\n')}</p>` : ''}
    <ol id="preview-ids">
      ${ids}
    </ol>
    ${form}`;
}
