// The real VS Code (code-server, driven in headless Chromium by
// puppeteer-core) with the packaged extension installed and the dfort
// server under test: opens a fixed-form and a free-form file and checks
// what a user sees — the language (not Plain Text), colouring, inlay
// hints, hover, completion, references, rename, folding and semantic
// tokens — and takes a screenshot of each step.
//
// Run by tests/editor_vscode.rs, which starts code-server; the environment
// gives DFORT_CS_URL (code-server's address), DFORT_CS_FOLDER (the
// workspace it serves, holding bratu.f and fig1.f90), DFORT_CS_SHOTS (the
// directory for the screenshots) and CHROMIUM (the browser). Prints one
// `PASS`/`FAIL` line per check and `code-server: PASS` at the end.

const puppeteer = require('puppeteer-core');
const path = require('path');

const url = process.env.DFORT_CS_URL;
const folder = process.env.DFORT_CS_FOLDER;
const shots = process.env.DFORT_CS_SHOTS;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failed = 0;

function check(ok, what, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${what}${ok ? '' : `\n  ${String(detail).slice(0, 2000)}`}`);
  if (!ok) failed += 1;
}

async function chord(page, mods, key) {
  for (const m of mods) await page.keyboard.down(m);
  await page.keyboard.press(key);
  for (const m of mods.slice().reverse()) await page.keyboard.up(m);
}

/// Runs a command of the palette by its title.
async function command(page, title) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 10000 });
  await page.keyboard.type(title);
  await firstPick(page, title);
  await page.keyboard.press('Enter');
  await sleep(500);
}

/// Waits until the quick pick's first row names `label` (the list is
/// filtered as typed; Enter before that would run another entry).
async function firstPick(page, label) {
  const ok = await waitFor(page, (want) => {
    const row = document.querySelector('.quick-input-list .monaco-list-row');
    return row && (row.getAttribute('aria-label') || row.innerText || '').includes(want);
  }, 15000, label);
  if (!ok) {
    const rows = await page.$$eval('.quick-input-list .monaco-list-row', (els) =>
      els.map((e) => e.getAttribute('aria-label')).join(' | '));
    throw new Error(`the quick pick offers no "${label}" first: ${rows}`);
  }
}

/// Moves the cursor to 1-based `line`, `col` (Go to Line).
async function gotoPos(page, line, col) {
  await chord(page, ['Control'], 'KeyG');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 10000 });
  await page.keyboard.type(`${line}:${col}`);
  await page.keyboard.press('Enter');
  await sleep(300);
}

const viewText = (page) => page.$eval('.view-lines', (e) => e.innerText.replace(/\u00a0/g, ' '));

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

/// Waits until `probe` (run in the page) is true, or `ms` pass.
async function waitFor(page, probe, ms, arg) {
  try {
    await page.waitForFunction(probe, { timeout: ms, polling: 200 }, arg);
    return true;
  } catch (e) {
    return false;
  }
}

async function openFile(page, name) {
  await chord(page, ['Control'], 'KeyP');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 10000 });
  await page.keyboard.type(name);
  await firstPick(page, name);
  await page.keyboard.press('Enter');
  await waitFor(page, (n) => {
    const tab = document.querySelector('.tab.active');
    return tab && tab.innerText.includes(n);
  }, 15000, name);
}

async function hoverAt(page, line, col) {
  await gotoPos(page, line, col);
  await command(page, 'Show or Focus Hover');
  await waitFor(page, () => {
    const h = document.querySelector('.monaco-hover');
    return h && h.innerText.trim().length > 0;
  }, 10000);
  const text = await page.$$eval('.monaco-hover', (els) => els.map((e) => e.innerText).join('\n'));
  return text;
}

/// Every check on one file. `f` says where things are in it.
async function file(page, f) {
  await openFile(page, f.name);
  await waitFor(page, (l) => {
    const m = document.getElementById('status.editor.mode');
    return m && m.innerText.includes(l);
  }, 20000, f.language);
  const mode = await page.$eval('#status\\.editor\\.mode', (e) => e.innerText).catch(() => '');
  check(mode.includes(f.language) && !mode.includes('Plain Text'),
    `${f.name}: opens as "${f.language}"`, mode);
  // Inlay hints come from the server once it has analysed the file.
  const hinted = await waitFor(page, (h) => {
    const v = document.querySelector('.view-lines');
    return v && v.innerText.includes(h);
  }, 40000, f.hint);
  check(hinted, `${f.name}: inlay hint "${f.hint}" shown`, await viewText(page));
  // Colouring: the TextMate grammar gives tokens several colours (once
  // the editor has tokenised the lines).
  await waitFor(page, () => new Set([...document.querySelectorAll('.view-lines span span')]
    .map((e) => e.className)).size >= 4, 20000);
  const classes = await page.$$eval('.view-lines span span', (els) =>
    [...new Set(els.map((e) => e.className).filter((c) => c.startsWith('mtk')))]);
  check(classes.length >= 4, `${f.name}: coloured (${classes.length} token styles)`, classes.join(' '));
  // Semantic tokens: the `active` modifier drawn bold.
  const semantic = await waitFor(page, (v) => [...document.querySelectorAll('.view-lines span.mtkb')]
    .some((e) => e.innerText.trim() === v), 20000, f.active);
  check(semantic, `${f.name}: semantic token marks \`${f.active}\` active (bold)`,
    await page.$$eval('.view-lines span.mtkb', (els) => els.map((e) => e.innerText).join(',')));
  // Folding from the server: its ranges get fold markers.
  const folds = await page.$$eval('.margin .codicon-folding-expanded', (els) => els.length);
  check(folds >= f.folds, `${f.name}: ${folds} folding markers (at least ${f.folds})`, folds);
  await shot(page, `${f.shot}-open`);
  // Hover on an active variable.
  const hover = await hoverAt(page, f.hover[0], f.hover[1]);
  check(f.hoverSays.every((s) => hover.includes(s)), `${f.name}: hover says ${f.hoverSays.join(', ')}`, hover);
  await shot(page, `${f.shot}-hover`);
  await page.keyboard.press('Escape');
  // References of a variable.
  await gotoPos(page, f.hover[0], f.hover[1]);
  await chord(page, ['Shift'], 'F12');
  const peeked = await waitFor(page, () => {
    const t = document.querySelector('.reference-zone-widget .peekview-title');
    return t && /\(\d+\)/.test(t.innerText);
  }, 15000);
  const title = peeked
    ? await page.$eval('.reference-zone-widget .peekview-title', (e) => e.innerText) : '';
  const count = Number((title.match(/\((\d+)\)/) || [0, 0])[1]);
  check(count >= f.references, `${f.name}: ${count} references of ${f.active} (at least ${f.references})`, title);
  await shot(page, `${f.shot}-references`);
  await page.keyboard.press('Escape');
  await sleep(300);
  // Completion on a new line of the unit.
  await gotoPos(page, f.complete[0], 1);
  await page.keyboard.press('End');
  await page.keyboard.press('Enter');
  await page.keyboard.type(f.complete[1]);
  await chord(page, ['Control'], 'Space');
  const listed = await waitFor(page, (want) => [...document.querySelectorAll('.suggest-widget .monaco-list-row')]
    .some((e) => (e.getAttribute('aria-label') || '').startsWith(want)), 15000, f.complete[2]);
  const items = await page.$$eval('.suggest-widget .monaco-list-row', (els) =>
    els.map((e) => e.getAttribute('aria-label')).join(' | '));
  check(listed, `${f.name}: completion offers ${f.complete[2]}`, items);
  await shot(page, `${f.shot}-completion`);
  await page.keyboard.press('Escape');
  await command(page, 'File: Revert File');
  await sleep(1000);
  // Rename: every occurrence changes.
  await gotoPos(page, f.rename[0], f.rename[1]);
  await page.keyboard.press('F2');
  const box = await page.waitForSelector('.rename-box input', { visible: true, timeout: 10000 })
    .then(() => true, () => false);
  if (box) {
    await sleep(500);
    await page.focus('.rename-box input');
    await chord(page, ['Control'], 'KeyA');
    await page.keyboard.type(f.rename[2]);
    await page.keyboard.press('Enter');
  }
  // Monaco draws blanks as no-break spaces.
  const renamed = await waitFor(page, (want) => document.querySelector('.view-lines').innerText
    .replace(/\u00a0/g, ' ').includes(want), 10000, f.rename[3]);
  check(box && renamed, `${f.name}: rename writes "${f.rename[3]}"`, await viewText(page));
  await shot(page, `${f.shot}-rename`);
  await command(page, 'File: Revert File');
  await sleep(500);
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: chromium,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    defaultViewport: { width: 1400, height: 900 },
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    await sleep(3000);
    await file(page, {
      name: 'bratu.f',
      shot: 'fixed-form',
      language: 'Fortran (fixed form)',
      hint: 'active',
      active: 'x',
      folds: 2,
      hover: [18, 17],
      hoverSays: ['active', 'Why varied'],
      references: 10,
      complete: [17, '      h = pr', 'prm'],
      rename: [14, 15, 'k', 'do 1 k=2'],
    });
    await file(page, {
      name: 'fig1.f90',
      shot: 'free-form',
      language: 'Fortran (free form)',
      hint: 'push(x)',
      active: 'x',
      folds: 3,
      hover: [15, 7],
      hoverSays: ['active', 'Recorded for the adjoint (TBR)'],
      references: 6,
      complete: [12, '  a = ch', 'check'],
      rename: [8, 14, 'b', 'b = b/2'],
    });
  } finally {
    await browser.close();
  }
  console.log(failed === 0 ? 'code-server: PASS' : `code-server: FAIL (${failed} checks)`);
  process.exit(failed === 0 ? 0 : 1);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
