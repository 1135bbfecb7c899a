import type { Request, Response } from 'express';
import type { SafeHtml } from './html';
import type { ConsoleSession } from './console-session';

/** The request properties the console guard sets: the session, and the form of a POST, read once. */
export const CONSOLE_SESSION = Symbol('rm-console-session');
export const CONSOLE_FORM = Symbol('rm-console-form');

/** A form's fields: a field given more than once is a list. */
export type ConsoleForm = Record<string, string | string[]>;

/** A request that went through the console guard. */
export type ConsoleRequest = Request & { [CONSOLE_SESSION]: ConsoleSession; [CONSOLE_FORM]: ConsoleForm };

/** The most bytes a console form may hold when the app reads bodies itself (an edited body and its fields). */
const MAX_FORM_BYTES = 1024 * 1024;

/** No script or style from anywhere but the console itself, no framing, forms only to itself. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'";

/** Sets the headers every console response carries, pages, redirects and errors alike. */
export function setConsoleHeaders(response: Response): void {
  response.setHeader('Content-Security-Policy', CONSOLE_CSP);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Referrer-Policy', 'no-referrer');
  response.setHeader('Cache-Control', 'no-store');
  response.setHeader('X-Frame-Options', 'DENY');
}

/** Sends a page. */
export function sendHtml(response: Response, page: SafeHtml, status = 200): void {
  setConsoleHeaders(response);
  response.status(status).type('text/html; charset=utf-8').send(page.value);
}

/** Answers a POST with 303 See Other, so a reload never repeats it. */
export function redirectTo(response: Response, location: string): void {
  setConsoleHeaders(response);
  response.redirect(303, location);
}

/**
 * The fields of a URL-encoded POST: those the app's body parser read, or, when the app parses no bodies
 * (`bodyParser: false`), read here from the stream, up to 1 MiB.
 */
export async function readForm(request: Request): Promise<ConsoleForm> {
  if (request.method !== 'POST') return {};
  const type = String(request.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return {};
  const parsed: unknown = request.body;
  if (typeof parsed === 'object' && parsed !== null && !Buffer.isBuffer(parsed)) return fieldsOf(parsed);
  if (request.readableEnded) return {};
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Error(`the form is larger than ${MAX_FORM_BYTES} bytes`);
    chunks.push(chunk);
  }
  const form: ConsoleForm = {};
  for (const [key, value] of new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) {
    const present = form[key];
    form[key] = present === undefined ? value : [...(Array.isArray(present) ? present : [present]), value];
  }
  return form;
}

/** One field as a string (the first when given more than once), or undefined. */
export function field(form: ConsoleForm | Record<string, unknown>, name: string): string | undefined {
  const value = form[name];
  if (typeof value === 'string') return value;
  return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
}

/** A field given any number of times, as a list of its non-empty strings. */
export function fields(form: ConsoleForm | Record<string, unknown>, name: string): string[] {
  const value = form[name];
  const values = Array.isArray(value) ? value : [value];
  return values.filter((item): item is string => typeof item === 'string' && item !== '');
}

function fieldsOf(parsed: object): ConsoleForm {
  const form: ConsoleForm = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value === 'string') form[key] = value;
    else if (Array.isArray(value))
      form[key] = value.filter((item): item is string => typeof item === 'string');
  }
  return form;
}
