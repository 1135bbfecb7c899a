import { html, type SafeHtml } from '../html';
import { csrfField, notice, type PageFrame } from './layout.view';

/** The sign-in form: one of the admin API's tokens, sent once, in a POST. */
export function signInView(frame: PageFrame, error?: string): SafeHtml {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Sign in · dead-letter console</title>
        <link rel="stylesheet" href="${frame.base}/assets/console.css" />
      </head>
      <body>
        <div class="sign-in">
          <h1>Dead-letter console</h1>
          ${error ? notice('error', error) : ''}
          <form class="stacked" method="post" action="${frame.base}/sign-in">
            ${csrfField(frame)}
            <label
              >Admin token<input type="password" name="token" autocomplete="off" required autofocus
            /></label>
            <button type="submit" class="primary">Sign in</button>
          </form>
          <p class="muted">
            Use a token of the dead-letter admin API. Your actions are recorded under its name.
          </p>
        </div>
      </body>
    </html>`;
}
