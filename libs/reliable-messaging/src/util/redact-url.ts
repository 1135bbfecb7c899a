/** A broker or database URL without credentials, query or fragment: safe for logs and health output. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const path = parsed.pathname && parsed.pathname !== '/' ? parsed.pathname : '';
    return `${parsed.protocol}//${parsed.host}${path}`;
  } catch {
    return '<invalid url>';
  }
}
