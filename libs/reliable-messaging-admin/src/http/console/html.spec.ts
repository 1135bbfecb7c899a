import { describe, expect, it } from '@jest/globals';
import { escapeHtml, html, visibleText } from './html';

describe('html', () => {
  it.each([
    [
      'a script element',
      '<script>window.__pwned=1</script>',
      '&lt;script&gt;window.__pwned=1&lt;/script&gt;',
    ],
    ['an attribute breakout', '" onmouseover="alert(1)', '&quot; onmouseover=&quot;alert(1)'],
    ['single quotes and ampersands', "it's & <b>", 'it&#39;s &amp; &lt;b&gt;'],
    ['an ANSI colour escape', '\u001b[31mred\u001b[0m', '\u241b[31mred\u241b[0m'],
    ['a C1 control sequence introducer', 'a\u009b31mb', 'a\\x9b31mb'],
    ['a right-to-left override', 'exe.\u202etxt', 'exe.&lt;U+202E&gt;txt'],
    ['a NUL and a DEL', 'a\u0000b\u007f', 'a\u2400b\u2421'],
  ])('escapes %s in an interpolated value', (_case, value, expected) => {
    expect(html`<td title="${value}">${value}</td>`.value).toBe(`<td title="${expected}">${expected}</td>`);
  });

  it('keeps newlines and tabs, which a <pre> shows as they are', () => {
    expect(visibleText('at a\n\tat b')).toBe('at a\n\tat b');
  });

  it('inserts nested html as it is, and joins arrays, each item escaped', () => {
    const rows = ['<a>', 'b'].map((cell) => html`<li>${cell}</li>`);
    // NOTE: Prettier formats html`` templates as HTML, adding whitespace between tags; compare without it.
    const list = html`<ul>
      ${rows}${['<i>']}
    </ul>`.value;
    expect(list.replace(/\s+/g, '')).toBe('<ul><li>&lt;a&gt;</li><li>b</li>&lt;i&gt;</ul>');
  });

  it('writes nothing for null, undefined and false, and numbers as text', () => {
    expect(html`${null}${undefined}${false}${0}${12}`.value).toBe('012');
  });

  it('escapes a plain string that claims to be html', () => {
    expect(escapeHtml('{"value":"<img src=x onerror=alert(1)>"}')).toBe(
      '{&quot;value&quot;:&quot;&lt;img src=x onerror=alert(1)&gt;&quot;}',
    );
  });
});
