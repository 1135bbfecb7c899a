import { html, type SafeHtml } from '../html';

/** An age in its largest two units: `45s`, `12m 5s`, `3h`, `2d 4h`. */
export function age(seconds: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ];
  const total = Math.max(0, Math.round(seconds));
  const first = units.findIndex(([, size]) => total >= size);
  if (first === -1) return '0s';
  const [unit, size] = units[first];
  const parts = [`${Math.floor(total / size)}${unit}`];
  const next = units[first + 1];
  if (next) {
    const rest = Math.floor((total % size) / next[1]);
    if (rest > 0) parts.push(`${rest}${next[0]}`);
  }
  return parts.join(' ');
}

/** A time as `2026-05-01 10:00:00Z` with its age, the full ISO time on hover; `–` when unknown. */
export function when(date: Date | undefined, now = Date.now()): SafeHtml {
  if (!date) return html`<span class="none">–</span>`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${age((now - date.getTime()) / 1000)} ago</time>`;
}

/** A count, with thousands separated. */
export function count(value: number | undefined): string {
  return value === undefined ? '–' : value.toLocaleString('en-US');
}

/** A size in bytes, in MiB past one (`64 MiB`), else in KiB or bytes. */
export function bytes(value: number): string {
  if (value >= 1024 * 1024) return `${count(Math.round(value / (1024 * 1024)))} MiB`;
  if (value >= 1024) return `${count(Math.round(value / 1024))} KiB`;
  return `${count(value)} bytes`;
}

/** A query string of the non-empty fields. */
export function query(fields: Record<string, string | string[] | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) {
    for (const item of Array.isArray(value) ? value : [value]) if (item) params.append(key, item);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The inputs of a filter form, one per `[name, label, hint]`, filled with `values`; `limit` asks for a number. */
export function filterInputs(
  filters: ReadonlyArray<readonly [string, string, string]>,
  values: Partial<Record<string, string>>,
): SafeHtml[] {
  return filters.map(
    ([name, label, hint]) =>
      html`<label
        >${label}<input
          name="${name}"
          value="${values[name] ?? ''}"
          placeholder="${hint}"
          ${name === 'limit' ? html` inputmode="numeric"` : ''}
      /></label>`,
  );
}

/** The terms and values of a `dl.facts` list, each value monospaced, `–` when it is missing or empty. */
export function factItems(facts: ReadonlyArray<readonly [string, unknown]>): SafeHtml[] {
  return facts.map(
    ([label, value]) =>
      html`<dt>${label}</dt>
        <dd class="mono">
          ${value === undefined || value === '' ? html`<span class="none">–</span>` : value}
        </dd>`,
  );
}
