'use strict';
// Colours as VS Code computes them: the extension's TextMate grammars
// (syntaxes/, registered in package.json) run through vscode-textmate with
// the Oniguruma engine VS Code itself uses, on the paper fixtures in both
// source forms and on lines written for one construct each. Checks that
// package.json contributes the two languages with their grammars and
// that each token below gets the scope a theme colours.
//
//   node test/grammar.js
//
// Exit status 0 and a line "vscode-grammar: PASS" when every check passed.

const fs = require('fs');
const path = require('path');
const textmate = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const extensionDir = path.resolve(__dirname, '..');
const repoRoot = path.resolve(extensionDir, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package.json'), 'utf8'));

let failures = 0;
function check(cond, name, detail) {
  if (cond) {
    console.log(`ok   ${name}`);
  } else {
    failures += 1;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
}

const languages = manifest.contributes.languages || [];
const grammars = manifest.contributes.grammars || [];
const byLanguage = (id) => grammars.find((g) => g.language === id);
for (const [id, ext] of [
  ['dfort-fortran-free', '.f90'],
  ['dfort-fortran-fixed', '.f'],
]) {
  const lang = languages.find((l) => l.id === id);
  check(lang && lang.extensions.includes(ext), `language ${id} claims ${ext}`);
  check(lang && fs.existsSync(path.join(extensionDir, lang.configuration)), `language ${id} has its configuration file`);
  check(byLanguage(id), `language ${id} has a grammar`);
}
check(
  !languages.some((l) => ['fortran', 'FortranFreeForm', 'FortranFixedForm'].includes(l.id)),
  'no language id of Modern Fortran is redefined',
);

async function main() {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      const g = grammars.find((x) => x.scopeName === scopeName);
      if (!g) return null;
      const file = path.join(extensionDir, g.path);
      return textmate.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  const free = await registry.loadGrammar(byLanguage('dfort-fortran-free').scopeName);
  const fixed = await registry.loadGrammar(byLanguage('dfort-fortran-fixed').scopeName);

  // The scopes of every token of `lines`, by line: [[text, scopes], ...].
  function tokenize(grammar, lines) {
    let state = textmate.INITIAL;
    return lines.map((line) => {
      const r = grammar.tokenizeLine(line, state);
      state = r.ruleStack;
      return r.tokens.map((t) => [line.slice(t.startIndex, t.endIndex), t.scopes]);
    });
  }

  // The index of the line holding `lineHas`, its tokens, and them shown.
  function lineTokens(grammar, lines, lineHas) {
    const i = lines.findIndex((l) => l.includes(lineHas));
    const tokens = i < 0 ? [] : tokenize(grammar, lines)[i];
    const shown = i < 0 ? `no line with ${JSON.stringify(lineHas)}` : tokens.map(([t, s]) => `${JSON.stringify(t)} ${s.slice(1).join(' ')}`).join(' | ');
    return { i, tokens, shown };
  }
  // `text` on the line holding `lineHas` carries a scope starting with `scope`.
  function expect(grammar, lines, lineHas, text, scope) {
    const { i, tokens, shown } = lineTokens(grammar, lines, lineHas);
    const hit = tokens.find(([t, scopes]) => t.trim() === text && scopes.some((s) => s.startsWith(scope)));
    check(hit, `${scope} on ${JSON.stringify(text)} (line ${i + 1})`, shown);
  }
  // Nothing on the line holding `lineHas` reads as a comment.
  function noComment(grammar, lines, lineHas) {
    const { i, tokens, shown } = lineTokens(grammar, lines, lineHas);
    check(i >= 0 && !tokens.some(([, s]) => s.some((x) => x.startsWith('comment'))), `no comment on line ${i + 1}`, shown);
  }

  const read = (name) => fs.readFileSync(path.join(repoRoot, 'tests', 'fixtures', 'papers', name), 'utf8').split(/\r?\n/);
  const fig1 = read('p000_fig1.f90');
  expect(free, fig1, '! Paper 000', '! Paper 000 (Hascoet, Naumann, Pascual), Figure 1, left column: original code.', 'comment.line');
  expect(free, fig1, 'subroutine tbr_fig1', 'subroutine', 'keyword.other.unit');
  expect(free, fig1, 'real(8), intent(inout)', 'real', 'storage.type');
  expect(free, fig1, 'real(8), intent(inout)', 'inout', 'storage.modifier.intent');
  expect(free, fig1, '!$ad independent(x)', '!$ad', 'keyword.control.directive.ad');
  expect(free, fig1, 'do while (check(j))', 'do while', 'keyword.control');
  expect(free, fig1, 'if (max(i, j) > 7) then', 'max', 'support.function.intrinsic');
  expect(free, fig1, 'if (max(i, j) > 7) then', 'then', 'keyword.control');
  expect(free, fig1, 'x(i) = j + sin(x(i))', 'sin', 'support.function.intrinsic');
  expect(free, fig1, 'a = 3.14159', '3.14159', 'constant.numeric');
  expect(free, fig1, 'end subroutine tbr_fig1', 'end subroutine', 'keyword.other.unit');
  expect(free, fig1, 'end do', 'end do', 'keyword.control');
  expect(free, ['block data init', 'end block data init'], 'end block', 'end block data', 'keyword.other.unit');

  const bratu = read('p000_bratu.f');
  expect(fixed, bratu, 'C Paper 000', 'C Paper 000 (Hascoet, Naumann, Pascual), Appendix A: Bratu problem.', 'comment.line');
  expect(fixed, bratu, 'subroutine bratu', 'subroutine', 'keyword.other.unit');
  expect(fixed, bratu, 'double precision x(dim)', 'double precision', 'storage.type');
  expect(fixed, bratu, 'do 1 i=2,dim-1', 'do', 'keyword.control');
  expect(fixed, bratu, '    1 continue', '1', 'constant.numeric.label');
  expect(fixed, bratu, '    1 continue', 'continue', 'keyword.control');
  expect(fixed, bratu, '     *      x(i)))', '*', 'punctuation.separator.continuation');
  expect(fixed, bratu, 'F(2) = x(1)+h*h*prm(1)/12.0*exp', 'exp', 'support.function.intrinsic');
  expect(fixed, bratu, 'F(2) = x(1)+h*h*prm(1)/12.0*exp', '12.0', 'constant.numeric');
  noComment(fixed, bratu, '      h = 2.0/(dim+1)');

  // One construct each.
  const lines = [
    "      IF (X .GT. 1.D0 .AND. .NOT. DONE) Y = 2.5D-3",
    "      S = 'it''s' // \"q\"",
    "#ifdef ALLOW_ADJOINT",
    "      X = 1.0_dp + .5e2 + 1.eq.2",
    '      CALL FOO(A, B)'.padEnd(72) + 'CARD0001',
    "*     a comment from column 1",
  ];
  expect(fixed, lines, 'IF (X', '.GT.', 'keyword.operator.logical');
  expect(fixed, lines, 'IF (X', '1.D0', 'constant.numeric');
  expect(fixed, lines, 'IF (X', '.NOT.', 'keyword.operator.logical');
  expect(fixed, lines, 'IF (X', '2.5D-3', 'constant.numeric');
  expect(fixed, lines, "S = 'it", "''", 'constant.character.escape');
  expect(fixed, lines, "S = 'it", 's', 'string.quoted.single');
  expect(fixed, lines, "S = 'it", 'q', 'string.quoted.double');
  expect(fixed, lines, '#ifdef', 'ifdef', 'keyword.control.directive');
  expect(fixed, lines, '1.0_dp', '1.0_dp', 'constant.numeric');
  expect(fixed, lines, '1.0_dp', '.5e2', 'constant.numeric');
  expect(fixed, lines, '1.0_dp', '.eq.', 'keyword.operator.logical');
  expect(fixed, lines, 'CARD0001', 'CARD0001', 'comment.line.beyond-column-72');
  expect(fixed, lines, 'CARD0001', 'CALL', 'keyword.control');
  const long = ['     &      + exp(x)'.padEnd(72) + 'CARD0002'];
  expect(fixed, long, 'CARD0002', '&', 'punctuation.separator.continuation');
  expect(fixed, long, 'CARD0002', 'exp', 'support.function.intrinsic');
  expect(fixed, long, 'CARD0002', 'CARD0002', 'comment.line.beyond-column-72');
  expect(fixed, lines, 'a comment from column 1', '*     a comment from column 1', 'comment.line');
  // Free form: column 73 is code, `*` in column 1 is an operator's place.
  noComment(free, lines, 'CARD0001');

  if (failures) {
    console.log(`vscode-grammar: FAIL (${failures} check(s) failed)`);
    process.exit(1);
  }
  console.log('vscode-grammar: PASS');
}

main().catch((e) => {
  console.log(`vscode-grammar: FAIL\n${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
