/** A page of the console as a browser gets it: status, where a redirect leads, `Retry-After`, and the HTML. */
export interface ConsolePage {
  status: number;
  location: string | null;
  retryAfter: string | null;
  html: string;
}

/**
 * A browser without script, for the console's pages: a cookie jar and form posts. It follows no redirect by
 * itself, so each test sees the console's 303s.
 */
export class FormBrowser {
  constructor(
    private readonly origin: string,
    readonly cookies = new Map<string, string>(),
  ) {}

  /** The same cookies, sent to another replica. */
  at(origin: string): FormBrowser {
    return new FormBrowser(origin, new Map(this.cookies));
  }

  get(path: string): Promise<ConsolePage> {
    return this.request(path, { method: 'GET' });
  }

  /** POSTs `fields` as `application/x-www-form-urlencoded`, as a browser submits a form. */
  post(path: string, fields: Array<[string, string]>): Promise<ConsolePage> {
    return this.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /** Signs in to the console at `consolePath` with `token` through its sign-in form. */
  async signIn(consolePath: string, token: string): Promise<ConsolePage> {
    const form = await this.get(`${consolePath}/sign-in`);
    return this.post(`${consolePath}/sign-in`, [
      ['_csrf', csrfOf(form)],
      ['token', token],
    ]);
  }

  private async request(path: string, init: RequestInit): Promise<ConsolePage> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(new URL(path, this.origin), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return {
      status: response.status,
      location: response.headers.get('location'),
      retryAfter: response.headers.get('retry-after'),
      html: await response.text(),
    };
  }
}

/** The CSRF token of the page's forms (every form that POSTs carries it). */
export function csrfOf(page: ConsolePage): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(page.html)?.[1];
  if (!token)
    throw new Error(`no CSRF field on the page (status ${page.status}): ${page.html.slice(0, 300)}`);
  return token;
}
