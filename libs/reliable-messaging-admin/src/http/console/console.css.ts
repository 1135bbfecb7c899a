/** The console's style sheet, served as `assets/console.css` (a file of its own, as the CSP allows no inline style). */
export const CONSOLE_CSS = `
:root { --fg: #1c2330; --muted: #5c6778; --line: #d9dee6; --bg: #f6f7f9; --panel: #fff; --accent: #1f5fbf;
  --danger: #b3261e; --ok: #1b7a3d; --warn: #9a6700; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg); font-size: 14px; line-height: 1.45; }
header.top { display: flex; align-items: center; gap: 24px; padding: 0 24px; height: 48px; background: #18202c; color: #e8ecf2; }
header.top .brand { font-weight: 600; letter-spacing: .02em; }
header.top nav { display: flex; gap: 4px; flex: 1; }
header.top nav a, header.top nav span { padding: 6px 12px; border-radius: 4px; color: #c9d1dd; text-decoration: none; }
header.top nav a:hover { background: #2a3443; color: #fff; }
header.top nav a.active { background: #33415a; color: #fff; }
header.top nav span.unavailable { color: #6c7788; cursor: not-allowed; }
header.top .sign-out { display: flex; align-items: center; gap: 8px; margin: 0; }
header.top .who { color: #9aa6b8; font-family: ui-monospace, monospace; font-size: 12px; }
header.top button.link { color: #c9d1dd; }
main { padding: 20px 24px 48px; max-width: 1600px; }
h1 { font-size: 20px; margin: 0 0 16px; }
h2 { font-size: 15px; margin: 28px 0 8px; }
a { color: var(--accent); }
.tiles { display: flex; gap: 12px; margin-bottom: 8px; }
.tile { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 16px; min-width: 170px; }
.tile .value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile.alert .value { color: var(--danger); }
table { width: 100%; border-collapse: collapse; background: var(--panel); border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
td.error { max-width: 420px; overflow-wrap: anywhere; }
tr.highlight td { background: #fff8d6; }
.none { color: var(--muted); }
.chip { display: inline-block; padding: 1px 8px; margin: 1px 4px 1px 0; border-radius: 10px; background: #eef1f5; border: 1px solid var(--line); font-size: 12px; text-decoration: none; color: var(--fg); }
.chip b { font-variant-numeric: tabular-nums; }
.nonzero { color: var(--danger); font-weight: 600; }
form.filters { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 8px 12px; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px; margin-bottom: 12px; }
form.filters label, form.stacked label { display: flex; flex-direction: column; gap: 2px; font-size: 12px; color: var(--muted); }
form.filters .buttons { grid-column: 1 / -1; display: flex; gap: 8px; }
input, select, textarea { font: inherit; padding: 5px 8px; border: 1px solid #b8c1ce; border-radius: 4px; color: var(--fg); background: #fff; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; width: 100%; }
button, .button { font: inherit; padding: 6px 14px; border-radius: 4px; border: 1px solid #9fb0c7; background: #fff; color: var(--fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.primary, .button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger, .button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
button.link { border: 0; background: none; padding: 0; text-decoration: underline; }
.actions { display: flex; gap: 8px; align-items: center; margin: 12px 0; flex-wrap: wrap; }
.notice { padding: 10px 14px; border-radius: 6px; border: 1px solid var(--line); background: var(--panel); }
.notice.ok { border-color: #9fd3b1; background: #eefaf2; color: var(--ok); }
.notice.error { border-color: #efb2ad; background: #fdf0ef; color: var(--danger); white-space: pre-wrap; }
.notice.info { border-color: #b9cdee; background: #f0f5fd; }
dl.facts { display: grid; grid-template-columns: 180px 1fr; gap: 4px 16px; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: #fbfcfd; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow: auto; max-height: 480px; font-size: 12.5px; white-space: pre-wrap; overflow-wrap: anywhere; }
.columns { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); gap: 20px; }
#headers td:first-child { white-space: nowrap; }
#headers td { overflow-wrap: anywhere; }
.sign-in { max-width: 420px; margin: 60px auto; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 24px; }
form.stacked { display: flex; flex-direction: column; gap: 12px; }
.muted { color: var(--muted); }
`;
