/** What a credential is replaced with. */
export const SCRUBBED = '***';

// The userinfo of any URL (`amqp://user:pass@host`, `postgres://user@host`, `mongodb+srv://u:p@a,b`). Greedy up
// to the last `@` before the path, so a password with a raw `@` in it goes too; it stops at whitespace and
// quotes, so `@` further on in the text is left alone.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#@"'`<>]*(?:@[^\s/?#@"'`<>]*)*@/gi;

// `Authorization: Bearer xyz`, `authorization=Basic xyz`, `"authorization":"Token xyz"`: the scheme stays.
const AUTHORIZATION = /\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:([a-z][\w-]*)\s+)?[^\s"',;&]+/gi;

// A bearer token without its header name (`... with Bearer eyJhbGci...`): eight characters or more of the
// token alphabet, so the word "bearer" in a sentence stays.
const BEARER = /\b(Bearer\s+)[\w\-.~+/]{8,}=*/gi;

// `password=...`, `pwd: ...`, `"client_secret":"..."`, `api-key=...` in query strings, connection strings (libpq
// `key=value`, ADO.NET `Key=Value;`), JSON and log lines. The key may carry a prefix (`db_password`,
// `x-api-key`, `access_token`); a quoted value goes up to its closing quote. A value that is a URL is left to
// the URL rule, so `includes credentials: https://***@host` keeps its host.
const SECRET_KEY =
  '(?:[\\w-]{0,32}[_-])?(?:password|passwd|pwd|pass|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|sig|signature)';
const KEY_VALUE = new RegExp(
  `(?<![\\w-])(${SECRET_KEY}["']?\\s*[:=]\\s*)(?![a-z][a-z0-9+.-]{0,31}:\\/\\/)("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s&;,"'<>]+)`,
  'gi',
);

/**
 * A text without the credentials it may carry: the user and password of any URL (`scheme://***@host`), the values
 * of `password=`, `pwd=`, `token=`, `secret=`, `api_key=` and their kin, and `Authorization` or bearer
 * credentials. Every error text the module logs, reports in health output or writes into a header goes through
 * this first: a driver's or `fetch`'s error message often quotes the URL it was given, password included.
 */
export function scrubCredentials(text: string): string {
  return text
    .replace(URL_USERINFO, `$1${SCRUBBED}@`)
    .replace(AUTHORIZATION, (_match, key: string, scheme: string | undefined) =>
      scheme ? `${key}${scheme} ${SCRUBBED}` : `${key}${SCRUBBED}`,
    )
    .replace(BEARER, `$1${SCRUBBED}`)
    .replace(KEY_VALUE, (_match, key: string, value: string) => {
      const quote = value[0] === '"' || value[0] === "'" ? value[0] : '';
      return `${key}${quote}${SCRUBBED}${quote}`;
    });
}
