import { describe, expect, it } from '@jest/globals';
import { html } from '../html';
import { layout } from './layout.view';

describe('layout', () => {
  const frame = { base: '/admin/console', csrf: 'token' };

  it('links every section the app can show', () => {
    const page = layout(frame, 'Overview', 'overview', html``).value;
    expect(page).toContain('href="/admin/console/outbox"');
    expect(page).not.toContain('class="unavailable"');
  });

  it('greys out a section the app cannot show, with the reason as its title and no link', () => {
    const page = layout(
      { ...frame, unavailable: { outbox: 'no "dataSource" option' } },
      'Overview',
      'overview',
      html``,
    ).value;
    expect(page).not.toContain('href="/admin/console/outbox"');
    expect(page).toContain(
      '<span class="unavailable" title="no &quot;dataSource&quot; option">Parked outbox rows</span>',
    );
  });
});
