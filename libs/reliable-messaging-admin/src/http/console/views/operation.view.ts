import type { DeadLetterOperationResult } from '../../../dead-letter/dead-letter-operation';
import { html, type SafeHtml } from '../html';
import { count, query } from './format';
import { csrfField, type PageFrame } from './layout.view';

/** A replay or purge as the preview page shows it: the selection's fields, carried into the confirming form. */
export type SelectionFields = Record<string, string | string[] | undefined>;

/** The words and places of one operation's preview page. */
export interface OperationCopy {
  /** Where its form posts, under the console: `replay`, `outbox/discard`. */
  path: string;
  /** What it acts on, counted: `dead letter(s)`. */
  noun: string;
  /** What is done to them: `replayed`. */
  done: string;
  /** The button's verb: `Replay`. */
  verb: string;
  /** Deletes for good: needs its confirmation ticked, and its button reads so. */
  destructive: boolean;
  /** Where Cancel leads. */
  back: string;
}

/** What a dry run found: the message ids it would touch, and whether more match. */
export type OperationPreview = Pick<DeadLetterOperationResult, 'messageIds' | 'more'> &
  Partial<Pick<DeadLetterOperationResult, 'failures'>>;

/** The copy of a dead-letter replay or purge. */
export function deadLetterCopy(
  frame: PageFrame,
  action: 'replay' | 'purge',
  selection: SelectionFields,
): OperationCopy {
  return {
    path: action,
    noun: 'dead letter(s)',
    done: action === 'replay' ? 'replayed' : 'purged (deleted for good)',
    verb: action === 'replay' ? 'Replay' : 'Purge',
    destructive: action === 'purge',
    back: `${frame.base}/messages${query({ queue: typeof selection.queue === 'string' ? selection.queue : undefined })}`,
  };
}

/**
 * The dry run of an operation (a replay, a purge, an outbox retry or discard): what it would touch, and a form
 * that does it. A destructive one asks for an explicit confirmation; cancelling goes back and changes nothing.
 */
export function operationPreviewView(
  frame: PageFrame,
  copy: OperationCopy,
  selection: SelectionFields,
  preview: OperationPreview,
): SafeHtml {
  const hidden = Object.entries(selection).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value])
      .filter((item): item is string => typeof item === 'string' && item !== '')
      .map((item) => html`<input type="hidden" name="${name}" value="${item}" />`),
  );
  const total = preview.messageIds.length;
  const failures = preview.failures ?? [];
  const ids = preview.messageIds.map((id) => html`<li class="mono">${id}</li>`);
  const form =
    total === 0
      ? html`<p><a class="button" href="${copy.back}">Back to the list</a></p>`
      : html`<form class="stacked" method="post" action="${frame.base}/${copy.path}">
          ${csrfField(frame)}${hidden}
          <label
            >Note for the audit log<input
              name="note"
              maxlength="1000"
              placeholder="optional: a ticket, a reason"
          /></label>
          ${
            copy.destructive
              ? html`<label class="confirm"
                  ><span
                    ><input type="checkbox" name="confirm" value="yes" required /> I understand that these
                    ${count(total)} ${copy.noun} are deleted for good</span
                  ></label
                >`
              : ''
          }
          <div class="actions">
            <button type="submit" class="${copy.destructive ? 'danger' : 'primary'}">
              ${copy.verb} ${count(total)} ${copy.destructive ? 'for good' : 'now'}
            </button>
            <a class="button" href="${copy.back}">Cancel</a>
          </div>
        </form>`;
  return html` <p class="notice info" id="preview-summary">
      Dry run: <b>${count(total)}</b> ${copy.noun} would be
      ${copy.done}${preview.more ? html`; <b>more match</b> beyond this batch, run it again for the rest` : ''}.
      Nothing has changed yet.
    </p>
    ${failures.length > 0 ? html`<p class="notice error">${failures.map((failure) => `${failure.messageId ?? '?'}: ${failure.error}`).join('\n')}</p>` : ''}
    <ol id="preview-ids">
      ${ids}
    </ol>
    ${form}`;
}
