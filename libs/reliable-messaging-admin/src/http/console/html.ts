/** HTML that is safe to send as it is: made by `html`, never by concatenating strings. */
export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Makes control characters visible: ANSI escapes (`ESC[31m`) become `␛[31m`, other C0 controls their Unicode
 * control pictures, DEL and C1 controls `\x9b`, and bidirectional overrides `<U+202E>`, so a dead letter cannot
 * hide text, recolour a terminal that copies it, or reorder what an operator reads. Newlines and tabs stay.
 */
export function visibleText(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g,
    (char) => {
      const code = char.charCodeAt(0);
      if (code < 0x20) return String.fromCharCode(0x2400 + code);
      if (code === 0x7f) return '\u2421';
      if (code <= 0x9f) return `\\x${code.toString(16)}`;
      return `<U+${code.toString(16).toUpperCase()}>`;
    },
  );
}

/** Text as HTML: control characters made visible, then `& < > " '` escaped (safe in elements and quoted attributes). */
export function escapeHtml(text: string): string {
  return visibleText(text).replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

/**
 * The one way the console writes HTML: a tagged template that escapes every interpolated value unless it is
 * SafeHtml already (another `html` result). Arrays are joined; `null`, `undefined` and `false` write nothing.
 * Attribute values must be quoted in the template.
 *
 * @example html`<td title="${reason}">${reason}</td>`
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return escapeHtml(value.toString());
  }
  return escapeHtml(JSON.stringify(value) ?? '');
}
