'use strict';
// A stand-in for the `vscode` module, enough for the extension and the real
// vscode-languageclient to start a server, sync documents and convert its
// answers. VS Code itself cannot run on CI machines; this lets the
// extension's real `activate()` run under plain Node.
//
// What the test can see and drive lives on `stub.host`: settings, open
// documents, the active editor, registered commands and providers, output
// channel lines, messages shown, edits applied and diagnostics published.
// Names nobody provided are collected in `host.missing` (undefined is
// returned, as feature detection expects).

const fs = require('fs');
const path = require('path');
const Module = require('module');

// ---------------------------------------------------------------- basics

class Disposable {
  constructor(callOnDispose) {
    this._callOnDispose = callOnDispose;
  }
  static from(...items) {
    return new Disposable(() => {
      for (const item of items) {
        if (item && typeof item.dispose === 'function') item.dispose();
      }
    });
  }
  dispose() {
    if (this._callOnDispose) {
      const f = this._callOnDispose;
      this._callOnDispose = undefined;
      f();
    }
  }
}

class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const entry = { listener, thisArg };
      this._listeners.add(entry);
      const d = new Disposable(() => this._listeners.delete(entry));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) {
    for (const { listener, thisArg } of [...this._listeners]) {
      try {
        listener.call(thisArg, value);
      } catch (e) {
        console.error('[vscode-stub] listener threw:', e);
      }
    }
  }
  dispose() {
    this._listeners.clear();
  }
}

class CancellationError extends Error {
  constructor() {
    super('Canceled');
    this.name = 'Canceled';
  }
}

class CancellationTokenSource {
  constructor() {
    this._emitter = new EventEmitter();
    const self = this;
    this._cancelled = false;
    this.token = {
      get isCancellationRequested() {
        return self._cancelled;
      },
      onCancellationRequested: this._emitter.event,
    };
  }
  cancel() {
    if (!this._cancelled) {
      this._cancelled = true;
      this._emitter.fire(undefined);
    }
  }
  dispose() {
    this._emitter.dispose();
  }
}

// ---------------------------------------------------------------- Uri

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    this.scheme = scheme;
    this.authority = authority || '';
    this.path = p || '';
    this.query = query || '';
    this.fragment = fragment || '';
  }
  static file(fsPath) {
    let p = fsPath.replace(/\\/g, '/');
    if (!p.startsWith('/')) p = '/' + p;
    return new Uri('file', '', p, '', '');
  }
  static parse(value) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) throw new Error(`[vscode-stub] cannot parse URI ${value}`);
    const dec = (s) => (s ? decodeURIComponent(s) : '');
    return new Uri(m[1], dec(m[2]), dec(m[3]), dec(m[4]), dec(m[5]));
  }
  static joinPath(base, ...segments) {
    return base.with({ path: path.posix.join(base.path, ...segments) });
  }
  static from(c) {
    return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment);
  }
  get fsPath() {
    return this.path;
  }
  with(change) {
    return new Uri(
      change.scheme ?? this.scheme,
      change.authority ?? this.authority,
      change.path ?? this.path,
      change.query ?? this.query,
      change.fragment ?? this.fragment,
    );
  }
  toString() {
    // As VS Code writes them: every path segment percent-encoded.
    const encPath = this.path
      .split('/')
      .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()))
      .join('/');
    let s = `${this.scheme}:`;
    if (this.authority || this.scheme === 'file') s += `//${encodeURIComponent(this.authority)}`;
    s += encPath;
    if (this.query) s += `?${encodeURIComponent(this.query)}`;
    if (this.fragment) s += `#${encodeURIComponent(this.fragment)}`;
    return s;
  }
  toJSON() {
    return { $mid: 1, scheme: this.scheme, authority: this.authority, path: this.path, query: this.query, fragment: this.fragment };
  }
}

// ---------------------------------------------------------------- positions

class Position {
  constructor(line, character) {
    if (line < 0 || character < 0) throw new Error('[vscode-stub] negative position');
    this.line = line;
    this.character = character;
  }
  isBefore(o) {
    return this.line < o.line || (this.line === o.line && this.character < o.character);
  }
  isBeforeOrEqual(o) {
    return this.isBefore(o) || this.isEqual(o);
  }
  isAfter(o) {
    return !this.isBeforeOrEqual(o);
  }
  isAfterOrEqual(o) {
    return !this.isBefore(o);
  }
  isEqual(o) {
    return this.line === o.line && this.character === o.character;
  }
  compareTo(o) {
    return this.isBefore(o) ? -1 : this.isEqual(o) ? 0 : 1;
  }
  translate(a = 0, b = 0) {
    const d = typeof a === 'object' ? a : { lineDelta: a, characterDelta: b };
    return new Position(this.line + (d.lineDelta || 0), this.character + (d.characterDelta || 0));
  }
  with(a, b) {
    const c = typeof a === 'object' ? a : { line: a, character: b };
    return new Position(c.line ?? this.line, c.character ?? this.character);
  }
}

class Range {
  constructor(a, b, c, d) {
    let start = typeof a === 'number' ? new Position(a, b) : a;
    let end = typeof a === 'number' ? new Position(c, d) : b;
    if (end.isBefore(start)) [start, end] = [end, start];
    this.start = start;
    this.end = end;
  }
  get isEmpty() {
    return this.start.isEqual(this.end);
  }
  get isSingleLine() {
    return this.start.line === this.end.line;
  }
  contains(x) {
    if (x instanceof Range) return this.contains(x.start) && this.contains(x.end);
    return !x.isBefore(this.start) && !this.end.isBefore(x);
  }
  isEqual(o) {
    return this.start.isEqual(o.start) && this.end.isEqual(o.end);
  }
  with(a, b) {
    const c = a instanceof Position || a === undefined ? { start: a, end: b } : a;
    return new Range(c.start ?? this.start, c.end ?? this.end);
  }
}

class Selection extends Range {
  constructor(anchor, active) {
    super(anchor, active);
    this.anchor = anchor;
    this.active = active;
  }
  get isReversed() {
    return this.active.isBefore(this.anchor);
  }
}

class Location {
  constructor(uri, rangeOrPosition) {
    this.uri = uri;
    this.range = rangeOrPosition instanceof Position ? new Range(rangeOrPosition, rangeOrPosition) : rangeOrPosition;
  }
}

// ---------------------------------------------------------------- language features' values

class MarkdownString {
  constructor(value = '', supportThemeIcons = false) {
    this.value = value;
    this.supportThemeIcons = supportThemeIcons;
    this.isTrusted = undefined;
    this.supportHtml = undefined;
  }
  appendText(t) {
    this.value += t.replace(/[\\`*_{}[\]()#+\-.!]/g, '\\$&');
    return this;
  }
  appendMarkdown(t) {
    this.value += t;
    return this;
  }
  appendCodeblock(code, language = '') {
    this.value += `\n\`\`\`${language}\n${code}\n\`\`\`\n`;
    return this;
  }
}

class Hover {
  constructor(contents, range) {
    this.contents = Array.isArray(contents) ? contents : [contents];
    this.range = range;
  }
}

const FoldingRangeKind = { Comment: 1, Imports: 2, Region: 3 };
const DocumentHighlightKind = { Text: 0, Read: 1, Write: 2 };
class DocumentHighlight {
  constructor(range, kind = DocumentHighlightKind.Text) {
    this.range = range;
    this.kind = kind;
  }
}
class FoldingRange {
  constructor(start, end, kind) {
    this.start = start;
    this.end = end;
    this.kind = kind;
  }
}

const InlayHintKind = { Type: 1, Parameter: 2 };
class InlayHint {
  constructor(position, label, kind) {
    this.position = position;
    this.label = label;
    this.kind = kind;
  }
}
class InlayHintLabelPart {
  constructor(value) {
    this.value = value;
  }
}

class TextEdit {
  constructor(range, newText) {
    this.range = range;
    this.newText = newText;
  }
  static replace(range, newText) {
    return new TextEdit(range, newText);
  }
  static insert(position, newText) {
    return new TextEdit(new Range(position, position), newText);
  }
  static delete(range) {
    return new TextEdit(range, '');
  }
}

class SnippetString {
  constructor(value = '') {
    this.value = value;
  }
}
class SnippetTextEdit {
  constructor(range, snippet) {
    this.range = range;
    this.snippet = snippet;
  }
}

/** Records operations in order; `applyEdit` hands it to the test. */
class WorkspaceEdit {
  constructor() {
    this.operations = [];
  }
  get size() {
    return new Set(this.operations.map((o) => (o.uri || o.newUri).toString())).size;
  }
  replace(uri, range, newText, metadata) {
    this.operations.push({ kind: 'edit', uri, edit: new TextEdit(range, newText), metadata });
  }
  insert(uri, position, newText, metadata) {
    this.replace(uri, new Range(position, position), newText, metadata);
  }
  delete(uri, range, metadata) {
    this.replace(uri, range, '', metadata);
  }
  has(uri) {
    return this.operations.some((o) => o.uri && o.uri.toString() === uri.toString());
  }
  set(uri, edits) {
    this.operations = this.operations.filter((o) => !(o.kind === 'edit' && o.uri.toString() === uri.toString()));
    for (const e of edits || []) {
      const [edit, metadata] = Array.isArray(e) ? e : [e, undefined];
      this.operations.push({ kind: 'edit', uri, edit, metadata });
    }
  }
  get(uri) {
    return this.operations.filter((o) => o.kind === 'edit' && o.uri.toString() === uri.toString()).map((o) => o.edit);
  }
  createFile(uri, options, metadata) {
    this.operations.push({ kind: 'create', uri, options, metadata });
  }
  deleteFile(uri, options, metadata) {
    this.operations.push({ kind: 'delete', uri, options, metadata });
  }
  renameFile(oldUri, newUri, options, metadata) {
    this.operations.push({ kind: 'rename', uri: oldUri, newUri, options, metadata });
  }
  entries() {
    const byUri = new Map();
    for (const o of this.operations) {
      if (o.kind !== 'edit') continue;
      const k = o.uri.toString();
      if (!byUri.has(k)) byUri.set(k, [o.uri, []]);
      byUri.get(k)[1].push(o.edit);
    }
    return [...byUri.values()];
  }
}

const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
const DiagnosticTag = { Unnecessary: 1, Deprecated: 2 };
class Diagnostic {
  constructor(range, message, severity = DiagnosticSeverity.Error) {
    this.range = range;
    this.message = message;
    this.severity = severity;
  }
}
class DiagnosticRelatedInformation {
  constructor(location, message) {
    this.location = location;
    this.message = message;
  }
}

const SymbolKind = {};
[
  'File', 'Module', 'Namespace', 'Package', 'Class', 'Method', 'Property', 'Field', 'Constructor', 'Enum',
  'Interface', 'Function', 'Variable', 'Constant', 'String', 'Number', 'Boolean', 'Array', 'Object', 'Key',
  'Null', 'EnumMember', 'Struct', 'Event', 'Operator', 'TypeParameter',
].forEach((n, i) => (SymbolKind[n] = i));
const SymbolTag = { Deprecated: 1 };
class DocumentSymbol {
  constructor(name, detail, kind, range, selectionRange) {
    Object.assign(this, { name, detail, kind, range, selectionRange, children: [] });
  }
}
class SymbolInformation {
  constructor(name, kind, containerName, location) {
    Object.assign(this, { name, kind, containerName, location });
  }
}

class CodeActionKind {
  constructor(value) {
    this.value = value;
  }
  append(part) {
    return new CodeActionKind(this.value ? `${this.value}.${part}` : part);
  }
  contains(other) {
    return this.value === other.value || this.value === '' || other.value.startsWith(this.value + '.');
  }
  intersects(other) {
    return this.contains(other) || other.contains(this);
  }
}
CodeActionKind.Empty = new CodeActionKind('');
for (const [name, value] of Object.entries({
  QuickFix: 'quickfix', Refactor: 'refactor', RefactorExtract: 'refactor.extract', RefactorInline: 'refactor.inline',
  RefactorMove: 'refactor.move', RefactorRewrite: 'refactor.rewrite', Source: 'source',
  SourceOrganizeImports: 'source.organizeImports', SourceFixAll: 'source.fixAll', Notebook: 'notebook',
})) {
  CodeActionKind[name] = new CodeActionKind(value);
}
const CodeActionTriggerKind = { Invoke: 1, Automatic: 2 };
class CodeAction {
  constructor(title, kind) {
    this.title = title;
    this.kind = kind;
  }
}

// Base classes the client extends when it loads (it never uses most of them here).
class CompletionItem {
  constructor(label, kind) {
    this.label = label;
    this.kind = kind;
  }
}
// The values of VS Code's enum (0-based, one less than LSP's).
const CompletionItemKind = {
  Text: 0, Method: 1, Function: 2, Constructor: 3, Field: 4, Variable: 5, Class: 6, Interface: 7,
  Module: 8, Property: 9, Unit: 10, Value: 11, Enum: 12, Keyword: 13, Snippet: 14, Color: 15,
  File: 16, Reference: 17, Folder: 18, EnumMember: 19, Constant: 20, Struct: 21, Event: 22,
  Operator: 23, TypeParameter: 24, User: 25, Issue: 26,
};
const CompletionItemTag = { Deprecated: 1 };
const CompletionTriggerKind = { Invoke: 0, TriggerCharacter: 1, TriggerForIncompleteCompletions: 2 };
const SignatureHelpTriggerKind = { Invoke: 1, TriggerCharacter: 2, ContentChange: 3 };
class SignatureHelp {
  constructor() {
    this.signatures = [];
    this.activeSignature = 0;
    this.activeParameter = 0;
  }
}
class SignatureInformation {
  constructor(label, documentation) {
    this.label = label;
    this.documentation = documentation;
    this.parameters = [];
  }
}
class ParameterInformation {
  constructor(label, documentation) {
    this.label = label;
    this.documentation = documentation;
  }
}
class SemanticTokensLegend {
  constructor(tokenTypes, tokenModifiers = []) {
    this.tokenTypes = tokenTypes;
    this.tokenModifiers = tokenModifiers;
  }
}
class SemanticTokens {
  constructor(data, resultId) {
    this.data = data;
    this.resultId = resultId;
  }
}
class SemanticTokensEdit {
  constructor(start, deleteCount, data) {
    this.start = start;
    this.deleteCount = deleteCount;
    this.data = data;
  }
}
class SemanticTokensEdits {
  constructor(edits, resultId) {
    this.edits = edits;
    this.resultId = resultId;
  }
}
class CompletionList {
  constructor(items = [], isIncomplete = false) {
    this.items = items;
    this.isIncomplete = isIncomplete;
  }
}
class CodeLens {
  constructor(range, command) {
    this.range = range;
    this.command = command;
  }
  get isResolved() {
    return !!this.command;
  }
}
class DocumentLink {
  constructor(range, target) {
    this.range = range;
    this.target = target;
  }
}
class HierarchyItem {
  constructor(kind, name, detail, uri, range, selectionRange) {
    Object.assign(this, { kind, name, detail, uri, range, selectionRange });
  }
}
class TypeHierarchyItem extends HierarchyItem {}
class CallHierarchyItem extends HierarchyItem {}

const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
const LogLevel = { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 };
const FileType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 };
const TextDocumentSaveReason = { Manual: 1, AfterDelay: 2, FocusOut: 3 };
const EndOfLine = { LF: 1, CRLF: 2 };
const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 };
const NotebookCellKind = { Markup: 1, Code: 2 };
const ViewColumn = { Active: -1, Beside: -2, One: 1 };

class RelativePattern {
  constructor(base, pattern) {
    this.baseUri = typeof base === 'string' ? Uri.file(base) : base.uri || base;
    this.base = this.baseUri.fsPath;
    this.pattern = pattern;
  }
}

// ---------------------------------------------------------------- globs and selectors

/** A glob (`**`, `*`, `?`, `{a,b}`) as a regular expression over '/'-separated paths. */
function globToRegExp(glob) {
  let re = '';
  let i = 0;
  let inBraces = false;
  while (i < glob.length) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` matches any number of whole directories, `**` anything.
        if (glob[i + 2] === '/') {
          re += '(?:.*/)?';
          i += 3;
        } else {
          re += '.*';
          i += 2;
        }
        continue;
      }
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '{') {
      re += '(?:';
      inBraces = true;
    } else if (c === '}' && inBraces) {
      re += ')';
      inBraces = false;
    } else if (c === ',' && inBraces) {
      re += '|';
    } else {
      re += c.replace(/[.+^$()|[\]\\]/g, '\\$&');
    }
    i++;
  }
  return new RegExp(`^${re}$`);
}

function matchFilter(filter, document) {
  if (typeof filter === 'string') return filter === document.languageId ? 10 : 0;
  if (filter.notebookType) return 0;
  let score = 0;
  if (filter.language) {
    if (filter.language === '*') score = Math.max(score, 5);
    else if (filter.language === document.languageId) score = 10;
    else return 0;
  }
  if (filter.scheme) {
    if (filter.scheme === '*') score = Math.max(score, 5);
    else if (filter.scheme === document.uri.scheme) score = 10;
    else return 0;
  }
  if (filter.pattern) {
    const pattern = typeof filter.pattern === 'string' ? filter.pattern : filter.pattern.pattern;
    const base = typeof filter.pattern === 'string' ? undefined : filter.pattern.base;
    let p = document.uri.path;
    if (base) {
      if (!p.startsWith(base.replace(/\\/g, '/') + '/')) return 0;
      p = p.slice(base.length + 1);
    }
    if (globToRegExp(pattern).test(p)) score = Math.max(score, 10);
    else return 0;
  }
  return score;
}

function match(selector, document) {
  const filters = Array.isArray(selector) ? selector : [selector];
  let best = 0;
  for (const f of filters) best = Math.max(best, matchFilter(f, document));
  return best;
}

// ---------------------------------------------------------------- documents

class TextDocument {
  constructor(uri, languageId, text, version = 1) {
    this.uri = uri;
    this.languageId = languageId;
    this.version = version;
    this._text = text;
    this.isDirty = false;
    this.isClosed = false;
    this.eol = text.includes('\r\n') ? EndOfLine.CRLF : EndOfLine.LF;
    this.encoding = 'utf8';
  }
  get fileName() {
    return this.uri.fsPath;
  }
  get isUntitled() {
    return this.uri.scheme === 'untitled';
  }
  get _lines() {
    return this._text.split(/\r?\n/);
  }
  get lineCount() {
    return this._lines.length;
  }
  lineAt(lineOrPos) {
    const line = typeof lineOrPos === 'number' ? lineOrPos : lineOrPos.line;
    const text = this._lines[line];
    const range = new Range(line, 0, line, text.length);
    const first = text.search(/\S/);
    return {
      lineNumber: line,
      text,
      range,
      rangeIncludingLineBreak: line + 1 < this.lineCount ? new Range(line, 0, line + 1, 0) : range,
      firstNonWhitespaceCharacterIndex: first < 0 ? text.length : first,
      isEmptyOrWhitespace: first < 0,
    };
  }
  offsetAt(pos) {
    const lines = this._text.split('\n');
    let off = 0;
    for (let i = 0; i < pos.line && i < lines.length; i++) off += lines[i].length + 1;
    return Math.min(off + pos.character, this._text.length);
  }
  positionAt(offset) {
    const before = this._text.slice(0, Math.max(0, Math.min(offset, this._text.length)));
    const lines = before.split('\n');
    return new Position(lines.length - 1, lines[lines.length - 1].length);
  }
  getText(range) {
    if (!range) return this._text;
    return this._text.slice(this.offsetAt(range.start), this.offsetAt(range.end));
  }
  getWordRangeAtPosition(pos, regex = /[A-Za-z_][A-Za-z0-9_]*/g) {
    const text = this.lineAt(pos.line).text;
    const re = new RegExp(regex.source, regex.flags.includes('g') ? regex.flags : regex.flags + 'g');
    let m;
    while ((m = re.exec(text))) {
      if (m.index <= pos.character && pos.character <= m.index + m[0].length) {
        return new Range(pos.line, m.index, pos.line, m.index + m[0].length);
      }
      if (m[0].length === 0) re.lastIndex++;
    }
    return undefined;
  }
  validatePosition(p) {
    return p;
  }
  validateRange(r) {
    return r;
  }
  save() {
    return Promise.resolve(true);
  }
}

// ---------------------------------------------------------------- the stand-in module

function createStub(options) {
  const { extensionDir, workspaceRoot, settings = {} } = options;
  const pkg = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package.json'), 'utf8'));

  const host = {
    settings: {}, // flat: 'dfort.serverPath' -> value (user settings over defaults)
    documents: [],
    commands: new Map(),
    providers: [], // { kind, selector, provider }
    outputLines: [], // [channel, text]
    messages: [], // [severity, text]
    // showInputBox: the options of each box shown, the answers to give
    // (in order; none left = cancelled), and what validateInput said.
    inputBoxes: [],
    inputAnswers: [],
    inputRefusals: [],
    appliedEdits: [],
    shownDocuments: [],
    diagnostics: new Map(), // uri string -> Diagnostic[]
    missing: new Set(),
    activeTextEditor: undefined,
    emitters: new Map(),
    workspaceFolders: workspaceRoot
      ? [{ uri: Uri.file(workspaceRoot), name: path.basename(workspaceRoot), index: 0 }]
      : undefined,
  };

  const emitter = (name) => {
    if (!host.emitters.has(name)) host.emitters.set(name, new EventEmitter());
    return host.emitters.get(name);
  };

  // Defaults from the extension's own package.json, then the test's settings.
  for (const [key, schema] of Object.entries(pkg.contributes.configuration.properties)) {
    if ('default' in schema) host.settings[key] = schema.default;
  }
  Object.assign(host.settings, settings);

  /** The value at a dotted key: a leaf, or an object built from the leaves below it. */
  function lookup(full) {
    if (full in host.settings) return structuredClone(host.settings[full]);
    let found = false;
    const result = {};
    for (const [key, value] of Object.entries(host.settings)) {
      if (full !== '' && !key.startsWith(full + '.')) continue;
      found = true;
      const parts = (full === '' ? key : key.slice(full.length + 1)).split('.');
      let cur = result;
      for (const p of parts.slice(0, -1)) cur = cur[p] ??= {};
      cur[parts[parts.length - 1]] = structuredClone(value);
    }
    return found ? result : undefined;
  }

  function getConfiguration(section) {
    const prefix = section ? section + '.' : '';
    const config = {
      get(key, defaultValue) {
        const v = lookup(prefix + key);
        return v === undefined ? defaultValue : v;
      },
      has(key) {
        return lookup(prefix + key) !== undefined;
      },
      inspect(key) {
        return { key: prefix + key, globalValue: lookup(prefix + key) };
      },
      update(key, value) {
        host.setSetting(prefix + key, value);
        return Promise.resolve();
      },
    };
    // Top-level keys of the section are readable as properties, as in VS Code.
    const tree = lookup(section || '') || {};
    for (const k of Object.keys(tree)) {
      if (!(k in config)) config[k] = tree[k];
    }
    return config;
  }

  host.setSetting = (key, value) => {
    host.settings[key] = value;
    emitter('workspace.onDidChangeConfiguration').fire({
      affectsConfiguration: (section) => key === section || key.startsWith(section + '.') || section.startsWith(key + '.'),
    });
  };

  host.openDocument = (fsPath, languageId, text) => {
    const doc = new TextDocument(Uri.file(fsPath), languageId, text ?? fs.readFileSync(fsPath, 'utf8'));
    host.documents.push(doc);
    emitter('workspace.onDidOpenTextDocument').fire(doc);
    return doc;
  };

  host.closeDocument = (doc) => {
    host.documents = host.documents.filter((d) => d !== doc);
    doc.isClosed = true;
    emitter('workspace.onDidCloseTextDocument').fire(doc);
  };

  host.showEditor = (doc, position) => {
    const editor = {
      document: doc,
      selection: new Selection(position, position),
      selections: [new Selection(position, position)],
      visibleRanges: [new Range(0, 0, doc.lineCount, 0)],
      options: {},
      viewColumn: 1,
    };
    host.activeTextEditor = editor;
    emitter('window.onDidChangeActiveTextEditor').fire(editor);
    emitter('window.onDidChangeVisibleTextEditors').fire([editor]);
    return editor;
  };

  host.providersFor = (kind, doc) =>
    host.providers.filter((p) => p.kind === kind && match(p.selector, doc) > 0).map((p) => p.provider);

  function outputChannel(name, opts) {
    const log = (level) => (msg, ...args) => host.outputLines.push([name, `[${level}] ${msg}${args.length ? ' ' + args.map(String).join(' ') : ''}`]);
    const channel = {
      name,
      append: (t) => host.outputLines.push([name, String(t)]),
      appendLine: (t) => host.outputLines.push([name, String(t)]),
      replace: () => {},
      clear: () => {},
      show: () => {},
      hide: () => {},
      dispose: () => {},
    };
    if (opts && opts.log) {
      Object.assign(channel, {
        logLevel: LogLevel.Trace,
        onDidChangeLogLevel: emitter(`log.${name}`).event,
        trace: log('trace'),
        debug: log('debug'),
        info: log('info'),
        warn: log('warning'),
        error: log('error'),
      });
    }
    return channel;
  }

  const showMessage = (severity) => (message, ...items) => {
    host.messages.push([severity, message]);
    return Promise.resolve(undefined);
  };

  /** A namespace that records what it lacks; `on*` are events, `register*` record providers. */
  function namespace(name, members) {
    return new Proxy(members, {
      get(target, prop) {
        if (prop in target || typeof prop === 'symbol') return target[prop];
        if (/^on[A-Z]/.test(prop)) return emitter(`${name}.${prop}`).event;
        if (/^register[A-Z]\w*Provider$/.test(prop)) {
          const kind = prop.replace(/^register/, '').replace(/Provider$/, '');
          return (selector, provider) => {
            const entry = { kind, selector, provider };
            host.providers.push(entry);
            return new Disposable(() => (host.providers = host.providers.filter((p) => p !== entry)));
          };
        }
        host.missing.add(`${name}.${String(prop)}`);
        return undefined;
      },
    });
  }

  const workspace = namespace('workspace', {
    getConfiguration,
    get textDocuments() {
      return host.documents;
    },
    notebookDocuments: [],
    get workspaceFolders() {
      return host.workspaceFolders;
    },
    get name() {
      return host.workspaceFolders ? host.workspaceFolders[0].name : undefined;
    },
    get rootPath() {
      return host.workspaceFolders ? host.workspaceFolders[0].uri.fsPath : undefined;
    },
    getWorkspaceFolder(uri) {
      return (host.workspaceFolders || []).find((f) => uri.path === f.uri.path || uri.path.startsWith(f.uri.path + '/'));
    },
    asRelativePath(p) {
      const s = typeof p === 'string' ? p : p.fsPath;
      return workspaceRoot && s.startsWith(workspaceRoot + '/') ? s.slice(workspaceRoot.length + 1) : s;
    },
    createFileSystemWatcher() {
      return {
        onDidCreate: emitter('watcher.onDidCreate').event,
        onDidChange: emitter('watcher.onDidChange').event,
        onDidDelete: emitter('watcher.onDidDelete').event,
        ignoreCreateEvents: false,
        ignoreChangeEvents: false,
        ignoreDeleteEvents: false,
        dispose() {},
      };
    },
    applyEdit(edit) {
      host.appliedEdits.push(edit);
      return Promise.resolve(true);
    },
    openTextDocument(arg) {
      const fsPath = typeof arg === 'string' ? arg : arg && arg.fsPath;
      const open = host.documents.find((d) => d.uri.fsPath === fsPath);
      return Promise.resolve(open || host.openDocument(fsPath, 'FortranFreeForm'));
    },
    fs: {
      stat: (uri) => fs.promises.stat(uri.fsPath).then((s) => ({ type: s.isDirectory() ? FileType.Directory : FileType.File, size: s.size, ctime: s.ctimeMs, mtime: s.mtimeMs })),
      readFile: (uri) => fs.promises.readFile(uri.fsPath),
    },
  });

  const window = namespace('window', {
    createOutputChannel: outputChannel,
    showInformationMessage: showMessage('info'),
    showWarningMessage: showMessage('warning'),
    showErrorMessage: showMessage('error'),
    showInputBox(options) {
      host.inputBoxes.push(options || {});
      const answer = host.inputAnswers.shift();
      const refusal = answer !== undefined && options && options.validateInput ? options.validateInput(answer) : undefined;
      if (refusal) {
        host.inputRefusals.push(refusal);
        return Promise.resolve(undefined);
      }
      return Promise.resolve(answer);
    },
    get activeTextEditor() {
      return host.activeTextEditor;
    },
    get visibleTextEditors() {
      return host.activeTextEditor ? [host.activeTextEditor] : [];
    },
    tabGroups: {
      all: [],
      activeTabGroup: { tabs: [], isActive: true, viewColumn: 1 },
      onDidChangeTabs: emitter('tabGroups.onDidChangeTabs').event,
      onDidChangeTabGroups: emitter('tabGroups.onDidChangeTabGroups').event,
    },
    withProgress(opts, task) {
      const source = new CancellationTokenSource();
      return Promise.resolve(task({ report: () => {} }, source.token));
    },
    // A document, or (as the language client's window/showDocument passes)
    // a Uri: opened from disk first, as VS Code does.
    showTextDocument(docOrUri) {
      let doc = docOrUri;
      if (docOrUri && typeof docOrUri.getText !== 'function') {
        const fsPath = docOrUri.fsPath;
        doc = host.documents.find((d) => d.uri.fsPath === fsPath) || host.openDocument(fsPath, 'FortranFreeForm');
      }
      host.shownDocuments.push(doc.uri.fsPath);
      return Promise.resolve(host.showEditor(doc, new Position(0, 0)));
    },
    createTextEditorDecorationType: () => ({ key: 'stub', dispose() {} }),
    createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
  });

  const languages = namespace('languages', {
    match,
    createDiagnosticCollection(name) {
      const mine = new Map();
      return {
        name,
        set(uri, diagnostics) {
          if (Array.isArray(uri)) {
            for (const [u, d] of uri) this.set(u, d);
            return;
          }
          mine.set(uri.toString(), diagnostics || []);
          host.diagnostics.set(uri.toString(), diagnostics || []);
        },
        delete(uri) {
          mine.delete(uri.toString());
          host.diagnostics.delete(uri.toString());
        },
        clear() {
          for (const k of mine.keys()) host.diagnostics.delete(k);
          mine.clear();
        },
        get: (uri) => mine.get(uri.toString()),
        has: (uri) => mine.has(uri.toString()),
        forEach(cb) {
          for (const [k, v] of mine) cb(Uri.parse(k), v, this);
        },
        dispose() {
          this.clear();
        },
      };
    },
    getLanguages: () =>
      Promise.resolve(['fortran', 'FortranFreeForm', 'FortranFixedForm', 'dfort-fortran-free', 'dfort-fortran-fixed', 'plaintext']),
    // As VS Code does: the document is closed and opened again with the new id.
    setTextDocumentLanguage(doc, languageId) {
      host.closeDocument(doc);
      return Promise.resolve(host.openDocument(doc.uri.fsPath, languageId, doc.getText()));
    },
  });

  const commands = namespace('commands', {
    registerCommand(id, callback, thisArg) {
      // As VS Code does: a second registration of an id is an error.
      if (host.commands.has(id)) throw new Error(`command '${id}' already exists`);
      host.commands.set(id, callback.bind(thisArg));
      return new Disposable(() => host.commands.delete(id));
    },
    executeCommand(id, ...args) {
      const cb = host.commands.get(id);
      if (!cb) return Promise.reject(new Error(`command '${id}' not found`));
      try {
        return Promise.resolve(cb(...args));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    getCommands: () => Promise.resolve([...host.commands.keys()]),
  });

  const env = namespace('env', {
    appName: 'Visual Studio Code (stand-in)',
    appRoot: '/nonexistent',
    language: 'en',
    machineId: 'stub',
    sessionId: 'stub',
    uriScheme: 'vscode',
    uiKind: 1,
    openExternal: () => Promise.resolve(true),
    clipboard: { readText: () => Promise.resolve(''), writeText: () => Promise.resolve() },
  });

  // Other extensions installed beside this one: host.installedExtensions
  // holds their ids.
  host.installedExtensions = [];
  const extensions = namespace('extensions', {
    all: [],
    getExtension: (id) => (host.installedExtensions.includes(id) ? { id, isActive: true, exports: undefined } : undefined),
  });

  const api = {
    version: pkg.engines.vscode.replace(/^[^\d]*/, ''),
    Disposable,
    EventEmitter,
    CancellationError,
    CancellationTokenSource,
    Uri,
    Position,
    Range,
    Selection,
    Location,
    MarkdownString,
    Hover,
    InlayHint,
    InlayHintKind,
    InlayHintLabelPart,
    FoldingRange,
    FoldingRangeKind,
    DocumentHighlightKind,
    DocumentHighlight,
    TextEdit,
    SnippetString,
    SnippetTextEdit,
    WorkspaceEdit,
    Diagnostic,
    DiagnosticSeverity,
    DiagnosticTag,
    DiagnosticRelatedInformation,
    DocumentSymbol,
    SymbolInformation,
    SymbolKind,
    SymbolTag,
    CodeAction,
    CompletionItem,
    CompletionItemKind,
    CompletionItemTag,
    CompletionTriggerKind,
    CompletionList,
    SignatureHelp,
    SignatureHelpTriggerKind,
    SemanticTokensLegend,
    SemanticTokens,
    SemanticTokensEdit,
    SemanticTokensEdits,
    SignatureInformation,
    ParameterInformation,
    CodeLens,
    DocumentLink,
    TypeHierarchyItem,
    CallHierarchyItem,
    CodeActionKind,
    CodeActionTriggerKind,
    ProgressLocation,
    LogLevel,
    FileType,
    TextDocumentSaveReason,
    EndOfLine,
    ConfigurationTarget,
    NotebookCellKind,
    ViewColumn,
    RelativePattern,
    workspace,
    window,
    languages,
    commands,
    env,
    extensions,
  };

  const module = new Proxy(api, {
    get(target, prop) {
      if (prop in target || typeof prop === 'symbol' || prop === '__esModule' || prop === 'then') return target[prop];
      host.missing.add(String(prop));
      return undefined;
    },
  });

  return { module, host, TextDocument };
}

/** Makes `require('vscode')` (from anywhere) return `stubModule`. */
function installStub(stubModule) {
  const id = path.join(__dirname, '__vscode_stub__.js');
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, ...rest) {
    if (request === 'vscode') return id;
    return resolve.call(this, request, parent, ...rest);
  };
  const m = new Module(id, module);
  m.filename = id;
  m.loaded = true;
  m.exports = stubModule;
  require.cache[id] = m;
}

module.exports = { createStub, installStub, globToRegExp };
