'use strict';
// Runs the extension's real `activate()` under a stand-in `vscode` module
// against the real server, through the real vscode-languageclient:
// handshake, didOpen, hover (as a request and through the registered hover
// provider), inlay hints, a server command run from the "command palette",
// a settings change, and shutdown.
//
//   DFORT_BIN=path/to/dfort node test/activate.js
//
// Environment:
//   DFORT_BIN            the dfort executable (required)
//   DFORT_EXTENSION_DIR  the extension to load (default: this folder; point it
//                        at an unpacked .vsix's extension/ to test the package)
//   DFORT_TEST_VERBOSE=1 print the client's log and trace as the test runs
// Exit status 0 and a line "vscode-activate: PASS" when every check passed.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { createStub, installStub } = require('./vscode-stub');

const TIMEOUT_MS = 30000;
const started = Date.now();
const verbose = process.env.DFORT_TEST_VERBOSE === '1';
const extensionDir = path.resolve(process.env.DFORT_EXTENSION_DIR || path.join(__dirname, '..'));
const repoRoot = path.resolve(__dirname, '..', '..', '..');
const original = path.join(repoRoot, 'tests', 'fixtures', 'papers', 'p000_fig1.f90');
// The workspace is a scratch folder holding a copy of the fixture, so that
// nothing the server might write lands in the repository.
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dfort-vscode-'));
const fixture = path.join(workDir, path.basename(original));
fs.copyFileSync(original, fixture);
const dfortBin = process.env.DFORT_BIN;

let stub;
const checks = [];

function elapsed() {
  return `${((Date.now() - started) / 1000).toFixed(2)} s`;
}

function ok(name, detail) {
  checks.push(name);
  console.log(`ok   ${name}${detail ? ` — ${detail}` : ''}`);
}

class CheckFailed extends Error {}

function check(cond, name, detail) {
  if (!cond) throw new CheckFailed(`${name}${detail ? `: ${detail}` : ''}`);
  ok(name);
}

function dumpLog() {
  if (!stub) return;
  const lines = stub.host.outputLines.map(([ch, t]) => `  [${ch}] ${t}`);
  console.log(`--- output channels (${lines.length} lines, last 200) ---`);
  console.log(lines.slice(-200).join('\n'));
  if (stub.host.messages.length) {
    console.log('--- messages shown ---');
    for (const [sev, m] of stub.host.messages) console.log(`  ${sev}: ${m}`);
  }
  if (stub.host.missing.size) {
    console.log(`--- vscode API names the stand-in lacks (read as undefined): ${[...stub.host.missing].sort().join(', ')}`);
  }
}

function finish(code, message) {
  fs.rmSync(workDir, { recursive: true, force: true });
  if (code !== 0) {
    dumpLog();
    console.log(`vscode-activate: FAIL (${elapsed()}): ${message}`);
  } else {
    if (stub && stub.host.missing.size) {
      console.log(`note: vscode API names the stand-in lacks (read as undefined): ${[...stub.host.missing].sort().join(', ')}`);
    }
    console.log(`vscode-activate: PASS (${elapsed()}, ${checks.length} checks): ${message}`);
  }
  process.exit(code);
}

const timer = setTimeout(() => finish(1, `timed out after ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);

/** Resolves with `f()` once it is truthy, polling every 20 ms; rejects after `ms`. */
async function waitFor(what, f, ms = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new CheckFailed(`waiting for ${what}: nothing after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Text of a hover's contents in any of the shapes LSP and VS Code allow. */
function hoverText(contents) {
  if (contents === null || contents === undefined) return '';
  if (Array.isArray(contents)) return contents.map(hoverText).join('\n');
  if (typeof contents === 'string') return contents;
  if (typeof contents.value === 'string') return contents.value;
  return JSON.stringify(contents);
}

/** Ids of this process's children whose command line mentions `needle`. */
function childProcesses(needle) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      if (ppid !== process.pid) continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(needle)) pids.push({ pid: Number(entry), cmdline: cmdline.trim() });
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function isRunning(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The range of the whole document, as VS Code asks for visible hints. */
function wholeDocument(doc) {
  const last = doc.lineCount - 1;
  return new stub.module.Range(0, 0, last, doc.lineAt(last).text.length);
}

/** Trace lines the client wrote for messages it sent or received with `method`. */
function traced(method) {
  return stub.host.outputLines.filter(([, t]) => t.includes(`'${method}'`) || t.includes(`'${method} - (`));
}

/** Parameters of the requests and notifications the client sent with `method` (from the verbose trace). */
function sentParams(method) {
  return traced(method)
    .map(([, t]) => t)
    .filter((t) => /^(\[\w+\] )?Sending /.test(t) && t.includes('Params: '))
    .map((t) => JSON.parse(t.slice(t.indexOf('Params: ') + 'Params: '.length)));
}

async function main() {
  if (!dfortBin) throw new CheckFailed('set DFORT_BIN to the dfort executable');
  if (!fs.existsSync(dfortBin)) throw new CheckFailed(`DFORT_BIN=${dfortBin} does not exist`);
  const main = path.join(extensionDir, 'out', 'extension.js');
  if (!fs.existsSync(main)) throw new CheckFailed(`${main} is missing: run "npx tsc -p ." first`);

  stub = createStub({
    extensionDir,
    workspaceRoot: workDir,
    settings: { 'dfort.serverPath': path.resolve(dfortBin), 'dfort.trace.server': 'verbose' },
  });
  installStub(stub.module);
  const host = stub.host;
  if (verbose) {
    const push = host.outputLines.push.bind(host.outputLines);
    host.outputLines.push = (...items) => {
      for (const [ch, t] of items) console.log(`  [${ch}] ${t}`);
      return push(...items);
    };
  }

  const extension = require(main);
  const { State } = require(require.resolve('vscode-languageclient/node', { paths: [extensionDir] }));
  const context = {
    subscriptions: [],
    extensionPath: extensionDir,
    extensionUri: stub.module.Uri.file(extensionDir),
    asAbsolutePath: (p) => path.join(extensionDir, p),
    storageUri: undefined,
    globalStorageUri: stub.module.Uri.file('/tmp/dfort-vscode-test-storage'),
    logUri: stub.module.Uri.file('/tmp/dfort-vscode-test-logs'),
    extensionMode: 3, // Test
    workspaceState: { get: (_k, d) => d, update: () => Promise.resolve(), keys: () => [] },
    globalState: { get: (_k, d) => d, update: () => Promise.resolve(), keys: () => [], setKeysForSync() {} },
    secrets: { get: () => Promise.resolve(undefined), store: () => Promise.resolve(), delete: () => Promise.resolve() },
    environmentVariableCollection: { replace() {}, append() {}, prepend() {}, get() {}, forEach() {}, delete() {}, clear() {} },
  };

  // 1. activate: the client starts `dfort lsp --stdio` and completes the handshake.
  const api = await extension.activate(context);
  check(api && typeof api === 'object', 'activate() returns the API object');
  const client = api.client;
  check(client !== undefined, 'the API holds a client', 'api.client is undefined (did the server fail to start?)');
  check(client.state === State.Running, 'the client is running', `state ${client.state}`);
  const caps = client.initializeResult && client.initializeResult.capabilities;
  check(caps, 'initialize returned capabilities');
  const serverInfo = client.initializeResult.serverInfo;
  ok('handshake done', `${serverInfo ? `${serverInfo.name} ${serverInfo.version || ''}`.trim() : 'no serverInfo'} in ${elapsed()}`);
  check(caps.hoverProvider, 'server offers hover', JSON.stringify(caps));
  check(caps.inlayHintProvider, 'server offers inlay hints', JSON.stringify(caps));
  const servers = childProcesses('lsp');
  check(servers.length === 1, 'one server process runs', JSON.stringify(servers));
  check(/ lsp --stdio$/.test(servers[0].cmdline), 'it runs as "<serverPath> lsp --stdio"', servers[0].cmdline);
  ok('server command line', servers[0].cmdline);

  // Commands: ours, and the server's (registered by the client from executeCommandProvider).
  check(host.commands.has('dfort.restartServer'), 'dfort.restartServer is registered');
  const announced = (caps.executeCommandProvider && caps.executeCommandProvider.commands) || [];
  for (const command of ['dfort.generateAdjoint', 'dfort.generateTangent', 'dfort.verify']) {
    check(announced.includes(command), `server announces ${command}`, `executeCommandProvider: ${JSON.stringify(caps.executeCommandProvider)}`);
    check(host.commands.has(command), `${command} is a VS Code command`);
  }
  const contributed = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package.json'), 'utf8')).contributes.commands.map((c) => c.command);
  for (const command of contributed) check(host.commands.has(command), `contributed command ${command} has a handler`);

  // The settings: initializationOptions, and the didChangeConfiguration the client sends at start.
  const [initialize] = sentParams('initialize');
  check(initialize, 'initialize request traced');
  const options = initialize.initializationOptions;
  const expected = {
    inlayHints: { active: true, push: true, reversal: true, address: true },
    roots: [],
    fixedFormExtensions: ['.f', '.for', '.f77', '.F'],
    fixedLineLength: 72,
    preprocessor: { enabled: null, include: [], define: {} },
  };
  for (const [key, value] of Object.entries(expected)) {
    check(JSON.stringify(options && options[key]) === JSON.stringify(value), `initializationOptions.${key} = ${JSON.stringify(value)}`, JSON.stringify(options));
  }
  await waitFor('didChangeConfiguration at start', () => sentParams('workspace/didChangeConfiguration').length > 0, 5000);
  const [startSettings] = sentParams('workspace/didChangeConfiguration');
  check(
    startSettings.settings && startSettings.settings.dfort && JSON.stringify(startSettings.settings.dfort.inlayHints) === JSON.stringify(expected.inlayHints),
    'workspace/didChangeConfiguration carries { settings: { dfort: {...} } }',
    JSON.stringify(startSettings),
  );

  // 2. didOpen: the document is opened the way VS Code opens it.
  const text = fs.readFileSync(fixture, 'utf8');
  const lines = text.split(/\r?\n/);
  const line = lines.findIndex((l) => /^\s*x\(i\) = j \+ sin\(x\(i\)\)/.test(l));
  check(line >= 0, 'fixture has the statement x(i) = j + sin(x(i))', original);
  const character = lines[line].indexOf('x(i)');
  // Under the extension's own language, as VS Code opens a .f90 file when
  // no other Fortran extension is installed.
  const doc = host.openDocument(fixture, 'dfort-fortran-free', text);
  await waitFor('didOpen sent', () => traced('textDocument/didOpen').length > 0, 5000);
  ok('client sent textDocument/didOpen', `${path.relative(repoRoot, original)} (copied to ${workDir}) as dfort-fortran-free`);

  // 3. hover, as a request through the client.
  const uri = doc.uri.toString();
  const hover = await client.sendRequest('textDocument/hover', {
    textDocument: { uri },
    position: { line, character },
  });
  check(hover && hover.contents, 'hover answered', JSON.stringify(hover));
  const markdown = hoverText(hover.contents);
  console.log(`     hover at ${line}:${character} (${JSON.stringify(lines[line].trim())}):\n${markdown.split('\n').map((l) => `       | ${l}`).join('\n')}`);
  if (hover.contents.kind !== undefined) check(hover.contents.kind === 'markdown', 'hover is markdown', hover.contents.kind);
  const firstLine = markdown.split('\n').find((l) => l.trim().length > 0) || '';
  check(/\bx\b/.test(firstLine), 'hover names the variable x on its first line', firstLine);
  check(/\bactive\b/i.test(markdown), 'hover says "active"', markdown);
  check(!/not active/i.test(markdown), 'x is active there (not "not active")', markdown);

  // The same through the hover provider the client registered, as VS Code asks it.
  const hoverProviders = host.providersFor('Hover', doc);
  check(hoverProviders.length === 1, 'one hover provider registered for the document', `${hoverProviders.length}`);
  const tokenSource = new stub.module.CancellationTokenSource();
  const vsHover = await hoverProviders[0].provideHover(doc, new stub.module.Position(line, character), tokenSource.token);
  check(vsHover && vsHover.contents.length > 0, 'hover provider answered');
  check(vsHover.contents[0] instanceof stub.module.MarkdownString, 'hover provider gives a MarkdownString');
  check(hoverText(vsHover.contents) === markdown, 'provider and request give the same text');

  // 3b. references, highlights and rename of `x`, through the providers the
  //     client registered, as VS Code asks them.
  const at = new stub.module.Position(line, character);
  const refProviders = host.providersFor('Reference', doc);
  check(refProviders.length === 1, 'one references provider registered', `${refProviders.length}`);
  const refs = (await refProviders[0].provideReferences(doc, at, { includeDeclaration: true }, tokenSource.token)) || [];
  // Its uses in code and in the `!$ad` directives that name it.
  const code = (l) => (l.trim().startsWith('!$ad') ? l : l.replace(/!.*$/, ''));
  const xCount = lines.reduce((n, l) => n + (code(l).match(/\bx\b/g) || []).length, 0);
  check(refs.length === xCount && refs.every((r) => r.uri.fsPath === fixture), `references of x: its ${xCount} uses in code and directives`, JSON.stringify(refs.map((r) => r.range.start)));
  const highlightProviders = host.providersFor('DocumentHighlight', doc);
  check(highlightProviders.length === 1, 'one document highlight provider registered', `${highlightProviders.length}`);
  const marks = (await highlightProviders[0].provideDocumentHighlights(doc, at, tokenSource.token)) || [];
  check(marks.length === xCount && marks.some((m) => m.kind === stub.module.DocumentHighlightKind.Write), 'x highlighted, its writes as writes', JSON.stringify(marks));
  const renameProviders = host.providersFor('Rename', doc);
  check(renameProviders.length === 1, 'one rename provider registered', `${renameProviders.length}`);
  const prepared = await renameProviders[0].prepareRename(doc, at, tokenSource.token);
  check(prepared && (prepared.start || prepared.range), 'prepareRename gives the name\'s range', JSON.stringify(prepared));
  const renamed = await renameProviders[0].provideRenameEdits(doc, at, 'xs', tokenSource.token);
  const renameEdits = renamed ? renamed.entries().flatMap(([, edits]) => edits) : [];
  check(renameEdits.length === xCount && renameEdits.every((e) => e.newText === 'xs'), 'rename x to xs edits every use', JSON.stringify(renameEdits));

  // 3c. completion (with resolution) and signature help, through the
  //     providers the client registered: `si|` of sin(x(i)) offers the
  //     intrinsic with its derivative; inside sin( its argument.
  const completionProviders = host.providersFor('CompletionItem', doc);
  check(completionProviders.length === 1, 'one completion provider registered', `${completionProviders.length}`);
  const sinAt = lines[line].indexOf('sin(');
  const typed = new stub.module.Position(line, sinAt + 2);
  const completed = await completionProviders[0].provideCompletionItems(doc, typed, tokenSource.token, { triggerKind: stub.module.CompletionTriggerKind.Invoke });
  const items = completed ? (Array.isArray(completed) ? completed : completed.items) : [];
  const sinItem = items.find((i) => (typeof i.label === 'string' ? i.label : i.label.label) === 'sin');
  check(sinItem && sinItem.kind === stub.module.CompletionItemKind.Function, 'completion of si offers the intrinsic sin', JSON.stringify(items.slice(0, 5).map((i) => i.label)));
  const resolvedItem = completionProviders[0].resolveCompletionItem
    ? await completionProviders[0].resolveCompletionItem(sinItem, tokenSource.token)
    : sinItem;
  const sinDoc = resolvedItem && resolvedItem.documentation ? hoverText([resolvedItem.documentation]) : '';
  check(/∂\/∂x = `cos\(x\)`/.test(sinDoc), 'the resolved item gives the derivative of sin', sinDoc);
  const signatureProviders = host.providersFor('SignatureHelp', doc);
  check(signatureProviders.length === 1, 'one signature help provider registered', `${signatureProviders.length}`);
  const inSin = new stub.module.Position(line, sinAt + 4);
  const sig = await signatureProviders[0].provideSignatureHelp(doc, inSin, tokenSource.token, { triggerKind: stub.module.SignatureHelpTriggerKind.Invoke, isRetrigger: false });
  check(sig && sig.signatures.length === 1 && sig.signatures[0].label === 'sin(x)' && sig.activeParameter === 0, 'signature help inside sin( gives sin(x), at x', JSON.stringify(sig));

  // 3d. semantic tokens: the provider the client registered marks x of
  //     `x(i) = j + sin(x(i))` active and recorded (the legend's bits).
  const tokenProviders = host.providersFor('DocumentSemanticTokens', doc);
  check(tokenProviders.length === 1, 'one semantic tokens provider registered', `${tokenProviders.length}`);
  const semantic = await tokenProviders[0].provideDocumentSemanticTokens(doc, tokenSource.token);
  const data = semantic ? Array.from(semantic.data) : [];
  let tl = 0;
  let tc = 0;
  const decoded = [];
  for (let k = 0; k + 4 < data.length; k += 5) {
    tl += data[k];
    tc = data[k] === 0 ? tc + data[k + 1] : data[k + 1];
    decoded.push({ line: tl, character: tc, length: data[k + 2], type: data[k + 3], modifiers: data[k + 4] });
  }
  const xToken = decoded.find((t) => t.line === line && t.character === character);
  check(xToken && (xToken.modifiers & 3) === 3, 'x of x(i) = j + sin(x(i)) is an active, recorded token', JSON.stringify(xToken));
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  const modifiers = (pkg.contributes.semanticTokenModifiers || []).map((m) => m.id);
  check(modifiers.includes('active') && modifiers.includes('recorded'), 'the extension declares the active and recorded modifiers', JSON.stringify(modifiers));

  // 3e. code lenses above tbr_fig1: adjoint · tangent · verify, and what
  //     its adjoint does.
  const lensProviders = host.providersFor('CodeLens', doc);
  check(lensProviders.length === 1, 'one code lens provider registered', `${lensProviders.length}`);
  const lenses = (await lensProviders[0].provideCodeLenses(doc, tokenSource.token)) || [];
  const lensTitles = lenses.map((l) => l.command && l.command.title);
  check(lensTitles[0] === 'adjoint' && lenses[0].command.command === 'dfort.generateAdjoint', 'the first lens generates the adjoint', JSON.stringify(lensTitles));
  check(lensTitles.some((t) => /^adjoint: active x/.test(t || '')), 'a lens says what the adjoint does', JSON.stringify(lensTitles));

  // Hover on a blank spot: null, not an error.
  const blank = lines.findIndex((l) => l.trim() === '');
  if (blank >= 0) {
    const none = await client.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: blank, character: 0 } });
    check(none === null || (none && hoverText(none.contents) === ''), 'no hover on a blank line', JSON.stringify(none));
  }

  // 4. inlay hints through the registered provider.
  const hintProviders = host.providersFor('InlayHints', doc);
  check(hintProviders.length === 1, 'one inlay hint provider registered', `${hintProviders.length}`);
  const hints = await hintProviders[0].provideInlayHints(doc, wholeDocument(doc), tokenSource.token);
  check(Array.isArray(hints), 'inlay hints answered', JSON.stringify(hints));
  const hintLabel = (h) => (typeof h.label === 'string' ? h.label : h.label.map((p) => p.value).join(''));
  ok('inlay hints', `${hints.length}: ${hints.slice(0, 6).map((h) => `${h.position.line}:${h.position.character} ${JSON.stringify(hintLabel(h))}`).join(', ')}${hints.length > 6 ? ', …' : ''}`);
  check(hints.length > 0, 'p000_fig1.f90 gets inlay hints (x is active)');

  // 4b. folding ranges from the server, through the registered provider:
  //     the DO WHILE body, both IF arms, the leading comment block.
  const foldProviders = host.providersFor('FoldingRange', doc);
  check(foldProviders.length === 1, 'one folding range provider registered', `${foldProviders.length}`);
  const folds = (await foldProviders[0].provideFoldingRanges(doc, {}, tokenSource.token)) || [];
  const shown = folds.map((f) => `${f.start + 1}-${f.end + 1}${f.kind === stub.module.FoldingRangeKind.Comment ? ' comment' : ''}`);
  ok('folding ranges', shown.join(', '));
  for (const want of ['1-3 comment', '13-20', '14-15', '16-17']) {
    check(shown.includes(want), `a fold over lines ${want}`, shown.join(', '));
  }

  // Diagnostics for the document (the fixture is valid: report what came).
  const diags = host.diagnostics.get(uri) || [];
  ok('diagnostics published for the document', `${diags.length}${diags.length ? ': ' + diags.map((d) => d.message).join('; ') : ''}`);

  // 5. a server command run from the "command palette": the extension fills in [uri, position].
  const cursor = new stub.module.Position(line, character);
  host.showEditor(doc, cursor);
  const editsBefore = host.appliedEdits.length;
  const messagesBefore = host.messages.length;
  const executeTraceBefore = traced('workspace/executeCommand').length;
  const result = await host.commands.get('dfort.generateAdjoint')();
  const executeTrace = traced('workspace/executeCommand').slice(executeTraceBefore);
  check(executeTrace.length > 0, 'dfort.generateAdjoint sent workspace/executeCommand');
  const executed = sentParams('workspace/executeCommand').filter((p) => p.command === 'dfort.generateAdjoint');
  check(
    executed.length === 1 &&
      JSON.stringify(executed[0].arguments) === JSON.stringify([uri, { line, character }]),
    'its arguments are [uri, position] of the cursor',
    JSON.stringify(executed),
  );
  const newEdits = host.appliedEdits.slice(editsBefore);
  const newMessages = host.messages.slice(messagesBefore);
  const describeOp = (o) => `${o.kind} ${o.uri.path}${o.kind === 'edit' ? ` (${o.edit.newText.length} chars)` : ''}`;
  ok(
    'dfort.generateAdjoint came back',
    `result ${JSON.stringify(result)}; edits applied: ${newEdits.map((e) => e.operations.map(describeOp).join(', ')).join(' | ') || 'none'}; messages: ${newMessages.map((m) => m.join(': ')).join(' | ') || 'none'}`,
  );
  const errors = newMessages.filter(([sev]) => sev === 'error');
  check(errors.length === 0, 'no error shown for dfort.generateAdjoint', errors.map((m) => m[1]).join('; '));
  check(newEdits.length === 0, 'no workspace edit is left for the client to apply', JSON.stringify(newEdits));
  const adjointFile = path.join(workDir, path.basename(fixture).replace(/\.f90$/, '_b.f90'));
  check(result && result.written === true, 'the server wrote the adjoint', JSON.stringify(result));
  check(fs.existsSync(adjointFile) && /subroutine tbr_fig1_b/i.test(fs.readFileSync(adjointFile, 'utf8')), `${path.basename(adjointFile)} on disk holds subroutine tbr_fig1_b`);
  check(
    newMessages.some(([sev, m]) => sev === 'info' && m.includes(path.basename(adjointFile)) && m.includes('dfort_stack.f90')),
    'the server says which files it wrote',
    JSON.stringify(newMessages),
  );
  check(
    host.activeTextEditor && host.activeTextEditor.document.uri.fsPath === adjointFile,
    'the adjoint is open in the editor (window/showDocument)',
    JSON.stringify(host.shownDocuments),
  );

  // 5b. the light bulb: the provider's "Generate tangent" action runs its
  //     command as VS Code runs a chosen code action's command.
  host.showEditor(doc, cursor);
  const actionProviders = host.providersFor('CodeActions', doc);
  check(actionProviders.length === 1, 'one code action provider registered', `${actionProviders.length}`);
  const here = new stub.module.Range(cursor, cursor);
  const offered = (await actionProviders[0].provideCodeActions(doc, here, { diagnostics: [], triggerKind: 1 }, tokenSource.token)) || [];
  const tangent = offered.find((a) => /^Generate tangent/.test(a.title));
  check(tangent && tangent.command && !tangent.edit, 'the light bulb offers "Generate tangent" as a command', offered.map((a) => a.title).join('; '));
  const tangentFile = path.join(workDir, path.basename(fixture).replace(/\.f90$/, '_d.f90'));
  await host.commands.get(tangent.command.command)(...(tangent.command.arguments || []));
  check(fs.existsSync(tangentFile) && /subroutine tbr_fig1_d/i.test(fs.readFileSync(tangentFile, 'utf8')), `choosing it writes ${path.basename(tangentFile)}`);
  check(
    host.activeTextEditor && host.activeTextEditor.document.uri.fsPath === tangentFile,
    'and opens it',
    JSON.stringify(host.shownDocuments),
  );
  host.showEditor(doc, cursor);

  // 6. a settings change reaches the server as workspace/didChangeConfiguration.
  const changesBefore = sentParams('workspace/didChangeConfiguration').length;
  host.setSetting('dfort.inlayHints.active', false);
  await waitFor('didChangeConfiguration after a change', () => sentParams('workspace/didChangeConfiguration').length > changesBefore, 5000);
  const changed = sentParams('workspace/didChangeConfiguration').slice(-1)[0];
  check(changed.settings.dfort.inlayHints.active === false, 'a settings change sent workspace/didChangeConfiguration with the new value', JSON.stringify(changed));
  const hintsAfter = await hintProviders[0].provideInlayHints(doc, wholeDocument(doc), tokenSource.token);
  ok('inlay hints with inlayHints.active = false', `${Array.isArray(hintsAfter) ? hintsAfter.length : JSON.stringify(hintsAfter)} (was ${hints.length})`);

  // 6b. with "Modern Fortran" installed beside dfort, a file VS Code gave
  //     our language id moves to Modern Fortran's, and dfort still serves it.
  const fixedFile = path.join(workDir, 'p000_bratu.f');
  fs.copyFileSync(path.join(repoRoot, 'tests', 'fixtures', 'papers', 'p000_bratu.f'), fixedFile);
  host.installedExtensions.push('fortran-lang.linter-gfortran');
  host.openDocument(fixedFile, 'dfort-fortran-fixed');
  await waitFor('the fixed-form file to move to FortranFixedForm', () =>
    host.documents.some((d) => d.uri.fsPath === fixedFile && d.languageId === 'FortranFixedForm'), 5000);
  ok('with Modern Fortran installed, p000_bratu.f is handed to FortranFixedForm');
  await waitFor('didOpen of p000_bratu.f as FortranFixedForm', () =>
    sentParams('textDocument/didOpen').some((p) => p.textDocument.uri.endsWith('/p000_bratu.f') && p.textDocument.languageId === 'FortranFixedForm'), 5000);
  ok('the server got p000_bratu.f as FortranFixedForm');
  host.installedExtensions.length = 0;

  // 6c. "Verify derivatives" on Bratu, whose integer arguments have no
  //     values yet: the extension asks for them (input boxes), the server
  //     keeps them in dfort.toml, and the check runs.
  const bratuDoc = host.documents.find((d) => d.uri.fsPath === fixedFile);
  const bratuLine = bratuDoc.getText().split(/\r?\n/).findIndex((l) => /^\s+subroutine bratu\b/i.test(l));
  check(bratuLine >= 0, 'p000_bratu.f has SUBROUTINE BRATU');
  host.showEditor(bratuDoc, new stub.module.Position(bratuLine + 1, 6));
  const boxesBefore = host.inputBoxes.length;
  host.inputAnswers.push('twelve', '12', '2');
  const refused = await host.commands.get('dfort.verify')();
  const firstBoxes = host.inputBoxes.slice(boxesBefore);
  check(firstBoxes.length === 1 && /the integer argument `dim`/.test(firstBoxes[0].prompt), 'verify asks for `dim` first', JSON.stringify(firstBoxes));
  check(firstBoxes[0].prompt.includes('dfort.toml') && firstBoxes[0].prompt.includes('int = { dim = VALUE }'), 'the prompt says where the value is kept', firstBoxes[0].prompt);
  check(host.inputRefusals.slice(-1)[0] === 'expected VALUE', '"twelve" is not an integer', JSON.stringify(host.inputRefusals));
  check(refused && refused.ok === false && !fs.existsSync(path.join(workDir, 'dfort.toml')), 'a cancelled box runs nothing and writes nothing', JSON.stringify(refused));
  check(host.messages.slice(-1)[0][1].includes('int = { dim = VALUE, parmax = VALUE }'), 'and names the dfort.toml table', JSON.stringify(host.messages.slice(-1)));
  const verified = await host.commands.get('dfort.verify')();
  const boxes = host.inputBoxes.slice(boxesBefore + 1).map((b) => b.prompt);
  check(boxes.length === 2 && /`dim`/.test(boxes[0]) && /`parmax`/.test(boxes[1]), 'verify asks for `dim` and `parmax`', JSON.stringify(boxes));
  const toml = fs.readFileSync(path.join(workDir, 'dfort.toml'), 'utf8');
  check(toml === '[[root]]\nname = "bratu"\nint = { dim = 12, parmax = 2 }\n', 'the values are kept in dfort.toml', toml);
  check(verified && verified.ok === true, 'and the derivatives of bratu check out', JSON.stringify(verified));
  host.inputAnswers.length = 0;

  // 7. dfort.restartServer: a new server process and a new running client.
  const firstPid = servers[0].pid;
  await host.commands.get('dfort.restartServer')();
  const restarted = api.client;
  check(restarted && restarted !== client && restarted.state === State.Running, 'dfort.restartServer starts a new client', `state ${restarted && restarted.state}`);
  await waitFor(`old server process ${firstPid} to exit`, () => !isRunning(firstPid), 5000);
  ok('the old server process is gone after the restart', `pid ${firstPid}`);
  const afterRestart = childProcesses('lsp');
  check(afterRestart.length === 1 && afterRestart[0].pid !== firstPid, 'one new server process runs', JSON.stringify(afterRestart));
  const hover2 = await restarted.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line, character } });
  check(hover2 && hoverText(hover2.contents) === hoverText(hover.contents), 'the restarted server has the open document (same hover)');

  // 8. deactivate: the client shuts the server down and it exits.
  const pid = afterRestart[0].pid;
  await extension.deactivate();
  check(restarted.state === State.Stopped, 'the client is stopped after deactivate()', `state ${restarted.state}`);
  await waitFor(`server process ${pid} to exit`, () => !isRunning(pid), 5000);
  ok('the server process exited', `pid ${pid}`);
  check(traced('shutdown').length > 0 && traced('exit').length > 0, 'client sent shutdown and exit');
  check(childProcesses('lsp').length === 0, 'no server process is left');
  for (const d of context.subscriptions) d.dispose();
  host.closeDocument(doc);

  // 9. a server that cannot be started: activate() still resolves, says what to do,
  //    and the commands explain instead of being missing.
  const leftovers = fs.readdirSync(workDir).filter((f) => f !== path.basename(fixture) && f !== 'p000_bratu.f').sort();
  const generated = [path.basename(tangentFile), path.basename(adjointFile), 'dfort_stack.f90', 'dfort.toml'].sort();
  check(JSON.stringify(leftovers) === JSON.stringify(generated), 'the server wrote the generated files, dfort.toml and nothing else', leftovers.join(', '));

  host.settings['dfort.serverPath'] = path.join(workDir, 'no-such-dfort');
  const messagesBeforeMissing = host.messages.length;
  const context2 = { ...context, subscriptions: [] };
  const api2 = await extension.activate(context2);
  check(api2.client && api2.client.state !== State.Running, 'with a missing binary activate() resolves, the client is not running');
  const startError = host.messages.slice(messagesBeforeMissing).find(([sev, m]) => sev === 'error' && m.includes('dfort.serverPath'));
  check(startError, 'an error message points at dfort.serverPath', JSON.stringify(host.messages.slice(messagesBeforeMissing)));
  check(host.commands.has('dfort.generateAdjoint'), 'dfort.generateAdjoint still exists without a server');
  const messagesBeforeCommand = host.messages.length;
  await host.commands.get('dfort.generateAdjoint')();
  const commandError = host.messages.slice(messagesBeforeCommand).find(([sev, m]) => sev === 'error' && m.includes('not running'));
  check(commandError, 'running it says the server is not running', JSON.stringify(host.messages.slice(messagesBeforeCommand)));
  await extension.deactivate();
  for (const d of context2.subscriptions) d.dispose();
  check(!host.commands.has('dfort.generateAdjoint') && !host.commands.has('dfort.restartServer'), 'deactivate and disposal leave no commands behind', [...host.commands.keys()].join(', '));

  clearTimeout(timer);
  return `activate → handshake → didOpen → hover → inlay hints → command → settings → restart → deactivate → missing binary, against ${path.resolve(dfortBin)}`;
}

main().then(
  (summary) => finish(0, summary),
  (error) => finish(1, error instanceof CheckFailed ? error.message : (error && error.stack) || String(error)),
);
