import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { bodyText, type DeadLetter } from 'nestjs-reliable-messaging/operations';

const FORBIDDEN_KEYS = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * A dead letter's JSON body with `path=value` edits applied (`quantity=2`, `address.zip="75001"`,
 * `note=null`). A value is read as JSON when it parses (a number, `true`, `null`, a quoted string, an object)
 * and as a plain string otherwise; missing objects along a path are created.
 */
export function applyJsonEdits(deadLetter: DeadLetter, edits: string[]): Buffer {
  const text = bodyText(deadLetter);
  let body: unknown;
  try {
    body = text === undefined ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidDeadLetterQueryError(
      '--set edits a JSON object body; this body is not one, use --body or --body-file',
    );
  }
  for (const edit of edits) {
    const at = edit.indexOf('=');
    if (at <= 0) throw new InvalidDeadLetterQueryError(`--set takes path=value, got '${edit}'`);
    const path = edit.slice(0, at).split('.');
    if (path.some((key) => key === '' || FORBIDDEN_KEYS.has(key))) {
      throw new InvalidDeadLetterQueryError(`--set: '${edit.slice(0, at)}' is not a usable path`);
    }
    const raw = edit.slice(at + 1);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
    let target = body as Record<string, unknown>;
    for (const key of path.slice(0, -1)) {
      const next = target[key];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) target[key] = {};
      target = target[key] as Record<string, unknown>;
    }
    target[path[path.length - 1]] = value;
  }
  return Buffer.from(JSON.stringify(body), 'utf8');
}
