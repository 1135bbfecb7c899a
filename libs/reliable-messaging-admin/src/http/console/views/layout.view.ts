import { html, type SafeHtml } from '../html';

/** A place in the console's navigation; one the page frame names `unavailable` shows greyed out, without a link. */
export interface ConsoleSection {
  key: string;
  label: string;
  /** The path under the console. */
  path: string;
}

/** The console's sections, in the order of the navigation. */
export const CONSOLE_SECTIONS: readonly ConsoleSection[] = [
  { key: 'overview', label: 'Overview', path: '' },
  { key: 'messages', label: 'Dead letters', path: 'messages' },
  { key: 'outbox', label: 'Parked outbox rows', path: 'outbox' },
  { key: 'scheduled', label: 'Scheduled', path: 'scheduled' },
  { key: 'sagas', label: 'Sagas', path: 'sagas' },
  { key: 'audit', label: 'Audit log', path: 'audit' },
];

/** What every page knows about the request it answers. */
export interface PageFrame {
  /** The console's URL path. */
  base: string;
  /** The session's CSRF token, for the forms of the page. */
  csrf: string;
  /** Who is signed in (`token:ops`), or undefined on the sign-in page and under an app's own guard. */
  actor?: string;
  /** Whether the signed-in token is a viewer's, which may not act: the pages leave out their action forms. */
  readOnly?: boolean;
  /** The sections this app cannot show, each with the reason (its title when greyed out). */
  unavailable?: Partial<Record<string, string>>;
}

/** A hidden CSRF field, in every form that POSTs. */
export function csrfField(frame: PageFrame): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${frame.csrf}" />`;
}

/** The page around the content: title, navigation, sign-out. */
export function layout(frame: PageFrame, title: string, active: string, content: SafeHtml): SafeHtml {
  const nav = CONSOLE_SECTIONS.map((section) => {
    const unavailable = frame.unavailable?.[section.key];
    return unavailable === undefined
      ? html`<a
          class="${section.key === active ? 'active' : ''}"
          href="${frame.base}${section.path ? `/${section.path}` : ''}"
          >${section.label}</a
        >`
      : html`<span class="unavailable" title="${unavailable}">${section.label}</span>`;
  });
  const signOut = frame.actor
    ? html`<form method="post" action="${frame.base}/sign-out" class="sign-out">
        ${csrfField(frame)} <span class="who">${frame.actor}</span
        ><button type="submit" class="link">Sign out</button>
      </form>`
    : html``;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · dead-letter console</title>
        <link rel="stylesheet" href="${frame.base}/assets/console.css" />
      </head>
      <body>
        <header class="top">
          <span class="brand">Dead-letter console</span>
          <nav>${nav}</nav>
          ${signOut}
        </header>
        <main>
          <h1>${title}</h1>
          ${content}
        </main>
      </body>
    </html>`;
}

/** A message box above a page's content. */
export function notice(kind: 'ok' | 'error' | 'info', text: string | SafeHtml): SafeHtml {
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;
}
