// dfort for VS Code: starts `dfort lsp` and forwards the editor's commands to it.
//
// Everything that knows Fortran lives in the server. This file only
//  - starts the server with the user's settings (initializationOptions and
//    workspace/didChangeConfiguration carry the `dfort` section),
//  - fills in `[uri, position]` for the server's commands when they are run
//    from the command palette, and shows what they return,
//  - restarts the server on request or when `dfort.serverPath` changes.

import * as path from 'path';
import * as vscode from 'vscode';
import {
  DocumentSelector,
  ExecuteCommandSignature,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

/** The languages this extension contributes (package.json), with their TextMate grammars. */
export const OWN_LANGUAGES = ['dfort-fortran-free', 'dfort-fortran-fixed'];

/** The "Modern Fortran" extension, and its language ids for ours. */
export const MODERN_FORTRAN = 'fortran-lang.linter-gfortran';
const MODERN_FORTRAN_LANGUAGE: Record<string, string> = {
  'dfort-fortran-free': 'FortranFreeForm',
  'dfort-fortran-fixed': 'FortranFixedForm',
};

/** Language ids of Fortran documents: ours, then those of other extensions ("Modern Fortran" uses the last two). */
export const FORTRAN_LANGUAGES = [...OWN_LANGUAGES, 'fortran', 'FortranFreeForm', 'FortranFixedForm'];

/** Fortran files by extension, for setups without a Fortran language extension. */
export const FORTRAN_FILES = '**/*.{f,for,f77,F,f90,F90,f95,f03,f08}';

/** Commands the server executes (`workspace/executeCommand`), arguments `[uri, position]`. */
export const SERVER_COMMANDS = ['dfort.generateAdjoint', 'dfort.generateTangent', 'dfort.verify'];

const TITLES: Record<string, string> = {
  'dfort.generateAdjoint': 'Generating the adjoint',
  'dfort.generateTangent': 'Generating the tangent',
  'dfort.verify': 'Verifying derivatives',
};

/** What `activate` returns: other extensions and the tests reach the client through it. */
export interface DfortApi {
  /** The current client (it may have failed to start: see its `state`); undefined after `deactivate()`. */
  readonly client: LanguageClient | undefined;
  /** Stops the current server (if any) and starts a new one with the current settings. */
  restart(): Promise<void>;
}

interface RootSetting {
  name: string;
  independent: string[];
  dependent: string[];
}

/** The `dfort` settings as the server expects them (a plain JSON object). */
export interface DfortSettings {
  serverPath: string;
  inlayHints: { active: boolean; push: boolean; reversal: boolean; address: boolean };
  roots: RootSetting[];
  fixedFormExtensions: string[];
  fixedLineLength: number;
  preprocessor: { enabled: boolean | null; include: string[]; define: Record<string, string> };
  trace: { server: string };
}

let client: LanguageClient | undefined;
/** Our stand-ins for server commands the running server does not announce. */
let fallbacks: vscode.Disposable[] = [];
let output: vscode.LogOutputChannel | undefined;
/** Serialises start/stop so that a restart never overlaps another one. */
let pending: Promise<void> = Promise.resolve();

export function readSettings(): DfortSettings {
  const cfg = vscode.workspace.getConfiguration('dfort');
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  const roots = cfg.get<unknown[]>('roots', []);
  return {
    serverPath: cfg.get<string>('serverPath', 'dfort') || 'dfort',
    inlayHints: {
      active: cfg.get<boolean>('inlayHints.active', true),
      push: cfg.get<boolean>('inlayHints.push', true),
      reversal: cfg.get<boolean>('inlayHints.reversal', true),
      address: cfg.get<boolean>('inlayHints.address', true),
    },
    roots: (Array.isArray(roots) ? roots : [])
      .filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null)
      .filter((r) => typeof r.name === 'string')
      .map((r) => ({
        name: r.name as string,
        independent: strings(r.independent),
        dependent: strings(r.dependent),
      })),
    fixedFormExtensions: strings(cfg.get<unknown>('fixedFormExtensions', ['.f', '.for', '.f77', '.F'])),
    fixedLineLength: cfg.get<number>('fixedLineLength', 72),
    preprocessor: {
      enabled: cfg.get<boolean | null>('preprocessor.enabled', null),
      include: strings(cfg.get<unknown>('preprocessor.include', [])),
      define: Object.fromEntries(
        Object.entries(cfg.get<Record<string, unknown>>('preprocessor.define', {}) ?? {}).filter(
          (e): e is [string, string] => typeof e[1] === 'string',
        ),
      ),
    },
    trace: { server: cfg.get<string>('trace.server', 'off') },
  };
}

/**
 * The executable to run. `~` and relative paths containing a separator are
 * resolved (against the first workspace folder); a bare name is looked up on PATH.
 */
function resolveServerPath(configured: string): string {
  let p = configured.trim();
  if (p.startsWith('~/') && process.env.HOME) {
    p = path.join(process.env.HOME, p.slice(2));
  }
  if (!path.isAbsolute(p) && (p.includes('/') || p.includes('\\'))) {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder && folder.uri.scheme === 'file') {
      p = path.join(folder.uri.fsPath, p);
    }
  }
  return p;
}

function documentSelector(): DocumentSelector {
  const selector: DocumentSelector = [];
  for (const scheme of ['file', 'untitled']) {
    for (const language of FORTRAN_LANGUAGES) {
      selector.push({ scheme, language });
    }
  }
  selector.push({ scheme: 'file', pattern: FORTRAN_FILES });
  return selector;
}

/** `[uri, position]` of the active editor's cursor, as the server's commands take them. */
function cursorArguments(c: LanguageClient): unknown[] | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return undefined;
  }
  return [
    c.code2ProtocolConverter.asUri(editor.document.uri),
    c.code2ProtocolConverter.asPosition(editor.selection.active),
  ];
}

/** Arguments for a server command: the given ones if they are `[uri, position]`, else the cursor's. */
function commandArguments(c: LanguageClient, args: unknown[]): unknown[] | undefined {
  if (args.length >= 2 && typeof args[0] === 'string') {
    return args;
  }
  // Run from the explorer's context menu: a file, no position.
  if (args.length >= 1 && args[0] instanceof vscode.Uri) {
    const editor = vscode.window.activeTextEditor;
    const sameFile = editor && editor.document.uri.toString() === args[0].toString();
    return [
      c.code2ProtocolConverter.asUri(args[0]),
      sameFile ? c.code2ProtocolConverter.asPosition(editor.selection.active) : { line: 0, character: 0 },
    ];
  }
  return cursorArguments(c);
}

/** Shows a message with a button that reveals the output channel. */
function showWithOutput(kind: 'info' | 'warning', message: string): void {
  const show = kind === 'info' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  void show(`dfort: ${message}`, 'Show output').then((choice) => {
    if (choice === 'Show output') {
      output?.show(true);
    }
  });
}

/**
 * Shows what a server command returned. The server's answers:
 *  - generate: `{ written, files, shown }`: the server wrote the files itself,
 *    said so and opened the first (`window/showMessage`, `window/showDocument`);
 *  - verify: `{ ok, summary, output }`; the server shows the summary itself
 *    (`window/showMessage`), so it only goes to the output channel here;
 *  - a plain string (or `{ message }`): shown as it is.
 */
function showResult(command: string, result: unknown): void {
  if (result === null || result === undefined || result === '') {
    return;
  }
  if (typeof result === 'string') {
    output?.info(`[${command}] ${result}`);
    const multiLine = result.includes('\n');
    const firstLine = result.split(/\r?\n/, 1)[0];
    if (multiLine) {
      showWithOutput('info', firstLine);
    } else {
      void vscode.window.showInformationMessage(`dfort: ${firstLine}`);
    }
    return;
  }
  if (typeof result !== 'object') {
    output?.info(`[${command}] ${String(result)}`);
    return;
  }
  const r = result as Record<string, unknown>;
  output?.info(`[${command}] ${JSON.stringify(result)}`);
  if (typeof r.output === 'string' && r.output.length > 0) {
    output?.info(r.output);
  }
  if (typeof r.written === 'boolean') {
    // generate: the server wrote the files, said so (window/showMessage) and
    // asked for the first to be opened (window/showDocument).
    return;
  }
  if (typeof r.message === 'string') {
    showWithOutput('info', r.message);
  }
}

/** A value `dfort verify` needs for a root's argument (the server's `missing` entries). */
export interface MissingValue {
  name: string;
  /** The key of the root's `dfort.toml` table: int, size, char or logical. */
  key: string;
  what: string;
  form: string;
}

/** What the user typed as the value `m` asks for, or undefined when it is not one. */
export function parseValue(m: MissingValue, text: string): unknown {
  const t = text.trim();
  if (m.key === 'char') {
    return t.length > 0 ? t : undefined;
  }
  if (m.key === 'logical') {
    const v = t.replace(/^\.|\.$/g, '').toLowerCase();
    return ['true', 't', '1'].includes(v) ? true : ['false', 'f', '0'].includes(v) ? false : undefined;
  }
  const integer = (s: string): number | undefined => (/^[+-]?\d+$/.test(s.trim()) ? Number(s.trim()) : undefined);
  if (m.form.startsWith('[')) {
    const inner = t.replace(/^\[/, '').replace(/\]$/, '');
    const items = inner.split(/[\s,]+/).filter((x) => x.length > 0).map(integer);
    return items.length > 0 && items.every((x) => x !== undefined) ? items : undefined;
  }
  const v = integer(t);
  return v !== undefined && (m.key !== 'size' || v >= 0) ? v : undefined;
}

/**
 * Asks for each missing value (input boxes); the values by `dfort.toml`
 * key, or undefined when the user cancelled.
 */
async function askForValues(root: string, config: string, missing: MissingValue[]): Promise<Record<string, Record<string, unknown>> | undefined> {
  const values: Record<string, Record<string, unknown>> = {};
  for (const m of missing) {
    const answer = await vscode.window.showInputBox({
      title: `dfort: verify ${root}`,
      prompt: `${m.what} (kept in ${config}, [[root]] "${root}", ${m.key} = { ${m.name} = ${m.form} })`,
      placeHolder: m.form,
      ignoreFocusOut: true,
      validateInput: (text) => (parseValue(m, text) === undefined ? `expected ${m.form}` : undefined),
    });
    if (answer === undefined) {
      return undefined;
    }
    (values[m.key] ??= {})[m.name] = parseValue(m, answer);
  }
  return values;
}

/** The `missing` entries of a verify result, if it has any. */
function missingValues(result: unknown): MissingValue[] {
  const r = result as { missing?: unknown } | null | undefined;
  return r && Array.isArray(r.missing) ? (r.missing as MissingValue[]) : [];
}

async function runServerCommand(
  c: LanguageClient,
  command: string,
  args: unknown[],
  next: ExecuteCommandSignature,
): Promise<unknown> {
  const full = commandArguments(c, args);
  if (!full) {
    void vscode.window.showWarningMessage(`dfort: open a Fortran file and place the cursor in a routine to run "${command}".`);
    return undefined;
  }
  const title = TITLES[command] ?? command;
  const run = (extra: unknown[]): Thenable<unknown> =>
    vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `dfort: ${title}…` }, async () =>
      next(command, [...full.slice(0, 2), ...extra]),
    );
  try {
    const verify = command === 'dfort.verify';
    let result = await run(verify ? [{ ask: true }] : []);
    // Verify: values nobody gave are asked for, saved in dfort.toml by the
    // server, and the run repeated (a size may follow from an integer).
    for (let round = 0; verify && round < 4 && missingValues(result).length > 0; round++) {
      const r = result as { root?: string; config?: string; summary?: string };
      const values = await askForValues(r.root ?? '', r.config ?? 'dfort.toml', missingValues(result));
      if (!values) {
        showWithOutput('warning', r.summary ?? 'values are missing');
        return result;
      }
      result = await run([{ ask: true, values }]);
    }
    if (missingValues(result).length > 0) {
      showWithOutput('warning', (result as { summary?: string }).summary ?? 'values are missing');
    }
    showResult(command, result);
    return result;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    output?.error(`[${command}] failed: ${message}`);
    void vscode.window.showErrorMessage(`dfort: ${message}`);
    return undefined;
  }
}

function createClient(settings: DfortSettings): LanguageClient {
  const command = resolveServerPath(settings.serverPath);
  const serverOptions: ServerOptions = {
    command,
    args: ['lsp'],
    transport: TransportKind.stdio,
  };
  let self: LanguageClient | undefined;
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(),
    // A function, so that a restart sends the settings of that moment.
    initializationOptions: () => readSettings(),
    synchronize: { configurationSection: 'dfort' },
    outputChannel: output,
    middleware: {
      // The client registers one VS Code command per command the server
      // announces; this fills in the cursor when one runs from the palette.
      executeCommand: (cmd, args, next) =>
        self && SERVER_COMMANDS.includes(cmd) ? runServerCommand(self, cmd, args, next) : next(cmd, args),
    },
  };
  self = new LanguageClient('dfort', 'dfort', serverOptions, clientOptions);
  return self;
}

/**
 * Commands of ours for the server commands the client did not register: the
 * server is not running, or does not announce them. Running one says why.
 */
async function registerMissingCommandFallbacks(c: LanguageClient): Promise<void> {
  const running = c.state === State.Running;
  const announced = (running && c.initializeResult?.capabilities.executeCommandProvider?.commands) || [];
  const existing = await vscode.commands.getCommands(true);
  for (const command of SERVER_COMMANDS) {
    if (announced.includes(command) || existing.includes(command)) {
      continue;
    }
    fallbacks.push(
      vscode.commands.registerCommand(command, () => {
        const serverPath = readSettings().serverPath;
        void vscode.window.showErrorMessage(
          running
            ? `dfort: the server "${serverPath}" does not offer "${command}"; is it an older dfort?`
            : `dfort: the language server "${serverPath}" is not running (see the "dfort" output). ` +
                'Check "dfort.serverPath", then run "dfort: Restart server".',
        );
      }),
    );
  }
}

function disposeFallbacks(): void {
  for (const d of fallbacks) {
    d.dispose();
  }
  fallbacks = [];
}

async function startClient(): Promise<void> {
  const settings = readSettings();
  const c = createClient(settings);
  client = c;
  try {
    await c.start();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    output?.error(`Could not start "${settings.serverPath} lsp": ${message}`);
    void vscode.window
      .showErrorMessage(
        `dfort: could not start the language server "${settings.serverPath}". ` +
          'Put the dfort binary on PATH or set "dfort.serverPath".',
        'Open settings',
      )
      .then((choice) => {
        if (choice === 'Open settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'dfort.serverPath');
        }
      });
  }
  await registerMissingCommandFallbacks(c);
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  disposeFallbacks();
  if (!c) {
    return;
  }
  try {
    if (c.state !== State.Stopped) {
      await c.stop(5000);
    }
  } catch (error) {
    output?.warn(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    await c.dispose();
  } catch {
    // Already stopped.
  }
}

function enqueue(step: () => Promise<void>): Promise<void> {
  pending = pending.then(step, step);
  return pending;
}

/**
 * Where "Modern Fortran" is installed too, a document VS Code gave one of
 * our language ids moves to Modern Fortran's: its colouring and its own
 * server keep working as before, and dfort serves both ids. Without it, our
 * languages colour Fortran that would otherwise open as Plain Text.
 */
async function handOverToModernFortran(doc: vscode.TextDocument): Promise<void> {
  const target = MODERN_FORTRAN_LANGUAGE[doc.languageId];
  if (!target || !vscode.extensions.getExtension(MODERN_FORTRAN)) {
    return;
  }
  try {
    await vscode.languages.setTextDocumentLanguage(doc, target);
  } catch (e) {
    output?.warn(`could not give ${doc.uri.toString()} the language ${target}: ${e}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<DfortApi> {
  output = vscode.window.createOutputChannel('dfort', { log: true });
  context.subscriptions.push(output);

  context.subscriptions.push(vscode.workspace.onDidOpenTextDocument((doc) => void handOverToModernFortran(doc)));
  for (const doc of vscode.workspace.textDocuments) {
    void handOverToModernFortran(doc);
  }

  const restart = (): Promise<void> =>
    enqueue(async () => {
      await stopClient();
      await startClient();
    });

  context.subscriptions.push(
    vscode.commands.registerCommand('dfort.restartServer', () => restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // Other dfort settings reach the running server as didChangeConfiguration.
      if (event.affectsConfiguration('dfort.serverPath')) {
        void restart();
      }
    }),
  );

  await enqueue(startClient);

  return {
    get client() {
      return client;
    },
    restart,
  };
}

export function deactivate(): Thenable<void> | undefined {
  return enqueue(stopClient);
}
