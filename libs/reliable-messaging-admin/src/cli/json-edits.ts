import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { bodyText, type DeadLetter } from 'nestjs-reliable-messaging/operations';
import { DEFAULT_JSON_LIMITS, parseUntrustedJson } from 'nestjs-reliable-messaging/safe-json';

const FORBIDDEN_KEYS = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * A dead letter's JSON body with `path=value` edits applied (`quantity=2`, `address.zip="75001"`,
 * `note=null`). A value is read as JSON when it parses (a number, `true`, `null`, a quoted string, an object)
 * and as a plain string otherwise; missing objects along a path are created. A path has at most
 * `DEFAULT_JSON_LIMITS.maxDepth` keys, and a body nested deeper than that is refused: JSON.stringify recurses once
 * per level, and a dead letter nested thousands deep would otherwise end the command with a RangeError.
 */
export function applyJsonEdits(deadLetter: DeadLetter, edits: string[]): Buffer {
  const text = bodyText(deadLetter);
  let body: unknown;
  try {
    body = text === undefined ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (text !== undefined && nestsDeeperThan(text, DEFAULT_JSON_LIMITS.maxDepth)) {
    throw new InvalidDeadLetterQueryError(
      `--set edits a body nested at most ${DEFAULT_JSON_LIMITS.maxDepth} levels; use --body or --body-file`,
    );
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
    if (
      path.length > DEFAULT_JSON_LIMITS.maxDepth ||
      path.some((key) => key === '' || FORBIDDEN_KEYS.has(key))
    ) {
      throw new InvalidDeadLetterQueryError(`--set: '${edit.slice(0, at)}' is not a usable path`);
    }
    const raw = edit.slice(at + 1);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
    if (value !== raw) value = withinLimits(raw, edit);
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

/** A JSON value given to --set, checked as an HTTP body from outside would be (depth, keys, prototype names). */
function withinLimits(raw: string, edit: string): unknown {
  try {
    return parseUntrustedJson(Buffer.from(raw, 'utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidDeadLetterQueryError(`--set: the value of '${edit.slice(0, 64)}' is refused: ${reason}`);
  }
}

/** Whether the brackets of JSON text nest deeper than `limit` (those inside strings skipped), without parsing it. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let at = 0; at < text.length; at += 1) {
    const char = text[at];
    if (inString) {
      if (char === '\\') at += 1;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') {
      if ((depth += 1) > limit) return true;
    } else if (char === '}' || char === ']') depth -= 1;
  }
  return false;
}
