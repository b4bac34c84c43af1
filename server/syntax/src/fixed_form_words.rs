//! Fixed-form statements whose words the free-form grammar cannot read.
//!
//! Blanks are insignificant in fixed form, so F77 code writes `DO10I=1,N`,
//! `GOTO10`, `CALLFOO(X)` or `IMPLICITNONE`, and Hollerith constants
//! (`4HABCD`) in DATA and FORMAT statements. The normaliser in
//! [`crate::fixed_form`] asks this module, per code line:
//!
//! * [`keyword_blanks`]: where to insert one blank so that a glued keyword
//!   stands apart (`DO 10 I=1,N`). The caller records each insertion in the
//!   offset map, like an inserted `&`.
//! * [`rewrite_holleriths`]: the line with each Hollerith constant of a DATA
//!   or FORMAT statement written as a character literal of the same length
//!   (`4HABCD` becomes `'ABCD'`, `12HHELLO WORLD.` becomes ` 'HELLO WORLD.'`),
//!   so offsets do not move.
//!
//! Both look at the code between the statement start (column 7) and the
//! inline comment, outside character literals. Keywords are only looked
//! for on the first line of a statement; Hollerith constants on every line
//! of a DATA or FORMAT statement, but never across a line end.

/// The kind of statement a code line belongs to, as far as Hollerith
/// constants are concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum StmtKind {
    #[default]
    Other,
    Data,
    Format,
}

/// What [`rewrite_holleriths`] carries from one line of a statement to its
/// continuation lines.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HollerithState {
    kind: StmtKind,
    /// The last non-blank char outside character literals so far (a closing
    /// quote for a literal), 0 when none.
    last: u8,
}

impl HollerithState {
    /// Forgets the statement (a line this module does not look at).
    pub(crate) fn reset(&mut self) {
        *self = HollerithState::default();
    }
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The significant chars of `code[from..end]`: non-blank, upper-cased, with
/// the contents of character literals (not their quotes) replaced by 0, and
/// their byte positions. Stops at a `!` outside literals.
struct Sig {
    pos: Vec<usize>,
    ch: Vec<u8>,
}

impl Sig {
    fn new(code: &[u8], from: usize, end: usize) -> Sig {
        let end = end.min(code.len());
        let mut sig = Sig {
            pos: Vec::new(),
            ch: Vec::new(),
        };
        let mut quote: Option<u8> = None;
        for (i, &c) in code.iter().enumerate().take(end).skip(from) {
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                    sig.push(i, c);
                } else {
                    sig.push(i, 0);
                }
                continue;
            }
            match c {
                b'!' => break,
                b'\'' | b'"' => quote = Some(c),
                _ => {}
            }
            if !is_blank(c) {
                sig.push(i, c.to_ascii_uppercase());
            }
        }
        sig
    }

    fn push(&mut self, i: usize, c: u8) {
        self.pos.push(i);
        self.ch.push(c);
    }
}

/// One statement of a line: a window of a [`Sig`].
#[derive(Clone, Copy)]
struct Stmt<'a> {
    sig: &'a Sig,
    /// Index of the statement's first significant char in `sig`.
    start: usize,
    /// Index one past its last.
    end: usize,
}

impl<'a> Stmt<'a> {
    fn len(&self) -> usize {
        self.end - self.start
    }

    fn ch(&self, i: usize) -> u8 {
        if i < self.len() {
            self.sig.ch[self.start + i]
        } else {
            0
        }
    }

    fn pos(&self, i: usize) -> usize {
        self.sig.pos[self.start + i]
    }

    /// The statement from its `i`-th significant char on.
    fn tail(&self, i: usize) -> Stmt<'a> {
        Stmt {
            sig: self.sig,
            start: (self.start + i).min(self.end),
            end: self.end,
        }
    }

    /// Whether the significant chars from `i` on spell `word`, written
    /// without blanks inside.
    fn word_at(&self, i: usize, word: &[u8]) -> bool {
        i + word.len() <= self.len()
            && word.iter().enumerate().all(|(k, &w)| self.ch(i + k) == w)
            && (1..word.len()).all(|k| self.pos(i + k) == self.pos(i) + k)
    }

    /// The index of the `)` matching the `(` at `open`.
    fn close_paren(&self, open: usize) -> Option<usize> {
        let mut depth = 0usize;
        for i in open..self.len() {
            match self.ch(i) {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The indices of `c` at parenthesis depth 0, from `i` on.
    fn at_depth0(&self, i: usize, c: u8) -> impl Iterator<Item = usize> + '_ {
        let mut depth = 0i32;
        (i..self.len()).filter(move |&k| {
            match self.ch(k) {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            depth == 0 && self.ch(k) == c
        })
    }

    fn has_depth0(&self, i: usize, c: u8) -> bool {
        self.at_depth0(i, c).next().is_some()
    }

    /// The end of the run of chars from `i` that satisfy `f`, written
    /// without blanks inside.
    fn run(&self, i: usize, f: impl Fn(u8) -> bool) -> usize {
        let mut k = i;
        while k < self.len() && f(self.ch(k)) && (k == i || self.pos(k) == self.pos(k - 1) + 1) {
            k += 1;
        }
        k
    }
}

/// Collects blank insertions: one before the `i`-th significant char of a
/// statement, unless a blank is there already.
struct Inserts<'a> {
    code: &'a [u8],
    at: Vec<usize>,
}

impl Inserts<'_> {
    fn before(&mut self, s: &Stmt, i: usize) {
        if i >= s.len() {
            return;
        }
        let p = s.pos(i);
        if p > 0 && !is_blank(self.code[p - 1]) {
            self.at.push(p);
        }
    }
}

/// The byte positions in `code` (one fixed-form code line, the first of its
/// statement) before which a blank makes a glued keyword readable, in
/// increasing order. `from` is where the statement text starts (column 7)
/// and `end` where the inline comment starts.
///
/// * `DO10I=1,N`, `DO 10I=1,N`, `DO10 I=1,N`, `DOI=1,N`: a DO loop when an
///   identifier, `=` and, after it, a comma at parenthesis depth 0 follow
///   (else it is an assignment such as `DO10I = 1.5`); `DOWHILE(C)` and
///   `DO10WHILE(C)` when nothing follows the condition.
/// * `GOTO10`, `GO TO10`, `GOTOK`: when the statement has no `=` at depth 0
///   (`GOTO1 = 3` is an assignment).
/// * `CALLFOO(X)`, `CALLFOO`: when the statement has no `=` at depth 0.
/// * `IMPLICITNONE`, `IMPLICITREAL*8(A-H)`: likewise.
/// * `GOTO` and `CALL` also after the condition of a logical IF.
///
/// Statements separated by `;` are looked at one by one.
pub(crate) fn keyword_blanks(code: &str, from: usize, end: usize) -> Vec<usize> {
    let bytes = code.as_bytes();
    let sig = Sig::new(bytes, from, end);
    let mut ins = Inserts {
        code: bytes,
        at: Vec::new(),
    };
    let mut start = 0;
    for k in 0..=sig.ch.len() {
        if k == sig.ch.len() || sig.ch[k] == b';' {
            let s = Stmt {
                sig: &sig,
                start,
                end: k,
            };
            statement(&s, &mut ins);
            start = k + 1;
        }
    }
    let mut at = ins.at;
    at.sort_unstable();
    at.dedup();
    at
}

/// The keywords of one statement.
fn statement(s: &Stmt, ins: &mut Inserts) {
    if s.word_at(0, b"DO") {
        do_statement(s, ins);
    } else if s.word_at(0, b"IMPLICIT") {
        if s.ch(8).is_ascii_alphabetic() && !s.has_depth0(0, b'=') {
            ins.before(s, 8);
        }
    } else if s.word_at(0, b"IF") && s.ch(2) == b'(' {
        if let Some(close) = s.close_paren(2) {
            let rest = s.tail(close + 1);
            action(&rest, ins);
        }
    } else {
        action(s, ins);
    }
}

/// `GOTO` and `CALL`: statements that may follow a logical IF.
fn action(s: &Stmt, ins: &mut Inserts) {
    let goto = s.word_at(0, b"GO") && s.word_at(2, b"TO");
    let call = s.word_at(0, b"CALL");
    if !(goto || call) || s.has_depth0(0, b'=') {
        return;
    }
    if goto {
        // `GOTO10`, or an assigned GOTO `GOTOK` / `GOTOK,(10,20)`.
        let label = s.run(4, |c| c.is_ascii_digit());
        if label > 4 && label == s.len() {
            ins.before(s, 4);
        } else if s.ch(4).is_ascii_alphabetic() {
            let name = s.run(4, is_ident);
            if name == s.len() || matches!(s.ch(name), b',' | b'(') {
                ins.before(s, 4);
            }
        }
    } else if s.ch(4).is_ascii_alphabetic() {
        ins.before(s, 4);
    }
}

/// `DO`: a label DO, a DO WHILE or a DO with a loop variable, told from an
/// assignment to a variable whose name starts with `DO`.
fn do_statement(s: &Stmt, ins: &mut Inserts) {
    let mut i = 2;
    let mut label = None;
    if s.ch(i).is_ascii_digit() {
        let end = s.run(i, |c| c.is_ascii_digit());
        if end - i > 5 || (!s.ch(end).is_ascii_alphabetic() && s.ch(end) != b',') {
            return;
        }
        label = Some(i);
        i = end;
    }
    let comma = s.ch(i) == b',' && label.is_some();
    if comma {
        i += 1;
    }
    let is_loop = if s.word_at(i, b"WHILE") && s.ch(i + 5) == b'(' {
        // DO WHILE (cond): nothing after the condition.
        s.close_paren(i + 5).is_some_and(|c| c + 1 == s.len())
    } else {
        // DO var = e1, e2: a comma at depth 0 after the `=`.
        let name = s.run(i, is_ident);
        s.ch(i).is_ascii_alphabetic()
            && s.ch(name) == b'='
            && s.ch(name + 1) != b'='
            && s.has_depth0(name + 1, b',')
    };
    if !is_loop {
        return;
    }
    ins.before(s, 2);
    if label.is_some() && !comma {
        ins.before(s, i);
    }
}

/// `code` (one fixed-form code line) with the Hollerith constants of a DATA
/// or FORMAT statement written as character literals of the same length;
/// `None` when there are none. `from` is where the statement text starts
/// (after column 6), `end` where the inline comment starts; `continuation`
/// says whether the line continues the statement of the previous code line,
/// whose kind and last char `state` holds (and is updated).
///
/// A Hollerith constant is `nH` followed by exactly `n` chars on the line,
/// where the digits start a token after `/`, `,` or `*` (DATA) or after
/// `(`, `,`, `/` or `:` (FORMAT). It becomes `n`-digits-minus-one blanks,
/// a quote, the chars and a quote. Constants containing a quote, `!` or a
/// non-ASCII char are left alone.
pub(crate) fn rewrite_holleriths(
    code: &str,
    from: usize,
    end: usize,
    continuation: bool,
    state: &mut HollerithState,
) -> Option<String> {
    let b = code.as_bytes();
    let end = end.min(b.len());
    if !continuation {
        let sig = Sig::new(b, from, end);
        let s = Stmt {
            sig: &sig,
            start: 0,
            end: sig.ch.len(),
        };
        let assignment = s.has_depth0(0, b'=');
        state.kind = if s.word_at(0, b"DATA") && !assignment {
            StmtKind::Data
        } else if s.word_at(0, b"FORMAT") && s.ch(6) == b'(' && !assignment {
            StmtKind::Format
        } else {
            StmtKind::Other
        };
        state.last = 0;
    }
    if state.kind == StmtKind::Other {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    let mut quote: Option<u8> = None;
    let mut i = from;
    while i < end {
        let c = b[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
                state.last = c;
            }
            i += 1;
            continue;
        }
        if c == b'!' || c == b';' {
            // A comment, or a second statement (not looked at).
            if c == b';' {
                state.kind = StmtKind::Other;
            }
            break;
        }
        if c == b'\'' || c == b'"' {
            quote = Some(c);
            i += 1;
            continue;
        }
        if is_blank(c) {
            i += 1;
            continue;
        }
        let fresh = i == from || !(is_ident(b[i - 1]) || b[i - 1] == b'.');
        let after = match state.kind {
            StmtKind::Data => matches!(state.last, b'/' | b',' | b'*'),
            StmtKind::Format => matches!(state.last, b'(' | b',' | b'/' | b':'),
            StmtKind::Other => false,
        };
        if c.is_ascii_digit() && fresh && after {
            if let Some(next) = hollerith(b, i, end) {
                let o = out.get_or_insert_with(|| b.to_vec());
                let digits = b[i..].iter().take_while(|d| d.is_ascii_digit()).count();
                let text = &b[i + digits + 1..next];
                let mut k = i;
                for _ in 1..digits {
                    o[k] = b' ';
                    k += 1;
                }
                o[k] = b'\'';
                o[k + 1..k + 1 + text.len()].copy_from_slice(text);
                o[next - 1] = b'\'';
                state.last = b'\'';
                i = next;
                continue;
            }
        }
        state.last = c;
        i += 1;
    }
    out.and_then(|o| String::from_utf8(o).ok())
}

/// The end of the Hollerith constant whose digits start at `i`, when it is
/// one that can be rewritten: 1 to 4 digits, not 0, `H` or `h`, then that
/// many ASCII chars before `end`, none of them a quote or `!`.
fn hollerith(b: &[u8], i: usize, end: usize) -> Option<usize> {
    let digits = b[i..end].iter().take_while(|d| d.is_ascii_digit()).count();
    if digits == 0 || digits > 4 || !matches!(b.get(i + digits), Some(b'H' | b'h')) {
        return None;
    }
    let n: usize = std::str::from_utf8(&b[i..i + digits]).ok()?.parse().ok()?;
    if n == 0 {
        return None;
    }
    let text_start = i + digits + 1;
    let text = std::str::from_utf8(b.get(text_start..end)?).ok()?;
    let mut chars = text.char_indices();
    let mut len = 0;
    for _ in 0..n {
        let (k, ch) = chars.next()?;
        // Non-ASCII text would move char boundaries (the text shifts by
        // one byte).
        if matches!(ch, '\'' | '"' | '!') || !ch.is_ascii() {
            return None;
        }
        len = k + ch.len_utf8();
    }
    Some(text_start + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` with the blanks [`keyword_blanks`] asks for.
    fn spaced(line: &str) -> String {
        let end = line.find('!').unwrap_or(line.len());
        let at = keyword_blanks(line, 6.min(line.len()), end);
        let mut out = String::new();
        let mut cur = 0;
        for p in at {
            out.push_str(&line[cur..p]);
            out.push(' ');
            cur = p;
        }
        out.push_str(&line[cur..]);
        out
    }

    #[test]
    fn glued_keywords_get_blanks() {
        for (src, want) in [
            ("      DO10I=1,N", "      DO 10 I=1,N"),
            ("      DO 10I=1,N", "      DO 10 I=1,N"),
            ("      DO10 I = 1, N", "      DO 10 I = 1, N"),
            ("      DO 10, I=1,N", "      DO 10, I=1,N"),
            ("      DO10,I=1,N", "      DO 10,I=1,N"),
            ("      DOI=1,N", "      DO I=1,N"),
            ("      DOI=1,MIN(N,M),2", "      DO I=1,MIN(N,M),2"),
            ("      DOWHILE(I.LT.N)", "      DO WHILE(I.LT.N)"),
            ("      do10while (i .lt. n)", "      do 10 while (i .lt. n)"),
            ("      GOTO10", "      GOTO 10"),
            ("      GO TO10", "      GO TO 10"),
            ("      goto 10", "      goto 10"),
            ("      GOTOK, (10, 20)", "      GOTO K, (10, 20)"),
            ("      CALLFOO(X)", "      CALL FOO(X)"),
            ("      CALLFOO", "      CALL FOO"),
            ("      IF (X .GT. 0) GOTO10", "      IF (X .GT. 0) GOTO 10"),
            (
                "      IF(A(1).EQ.')')CALLFOO(X)",
                "      IF(A(1).EQ.')')CALL FOO(X)",
            ),
            ("      IMPLICITNONE", "      IMPLICIT NONE"),
            (
                "      IMPLICITDOUBLEPRECISION(A-H,O-Z)",
                "      IMPLICIT DOUBLEPRECISION(A-H,O-Z)",
            ),
            ("      X = 1; CALLFOO", "      X = 1; CALL FOO"),
            ("      CALLFOO ! CALLBAR", "      CALL FOO ! CALLBAR"),
        ] {
            assert_eq!(spaced(src), want, "{src}");
        }
    }

    #[test]
    fn assignments_and_other_statements_stay() {
        for src in [
            "      DO10I = 1.5",
            "      DO10I = F(1,2)",
            "      DOI = 1",
            "      DO10I(1,2) = 3",
            "      DOWHILE(I) = 3",
            "      DOUBLEPRECISION X",
            "      DOUBLE PRECISION :: X = 1, Y = 2",
            "      CALLX = 2",
            "      CALLX(1, 2) = 2",
            "      GOTO1 = 3",
            "      GOTO(10,20),I",
            "      GO TO (10,20), I",
            "      IMPLICITX = 1",
            "      IF (X .GT. 0) CALLX = 1",
            "      IF (X .GT. 0) THEN",
            "      IF (X) 10, 20, 30",
            "      PRINT *, 'CALLFOO'",
            "      X = 'DO10I=1,N'",
            "      ENDDO",
            "      ELSEIF(X.GT.0)THEN",
            "      D O10I=1,N",
        ] {
            assert_eq!(spaced(src), src, "{src}");
        }
    }

    fn holl(lines: &[&str]) -> Vec<String> {
        let mut state = HollerithState::default();
        lines
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let end = l.len();
                let continuation = k > 0 && l.as_bytes().get(5) == Some(&b'&');
                rewrite_holleriths(l, 6.min(end), end, continuation, &mut state)
                    .unwrap_or_else(|| l.to_string())
            })
            .collect()
    }

    #[test]
    fn holleriths_become_literals_of_the_same_length() {
        for (src, want) in [
            (
                "      DATA IH /4HABCD, 4HEFGH/",
                "      DATA IH /'ABCD', 'EFGH'/",
            ),
            ("      DATA IH /2*2hAB/", "      DATA IH /2*'AB'/"),
            (
                "  100 FORMAT (5H X = , E12.4, 3HEND)",
                "  100 FORMAT (' X = ', E12.4, 'END')",
            ),
            (
                "  100 FORMAT(1H1,12HHELLO WORLD./1X,I5)",
                "  100 FORMAT('1', 'HELLO WORLD.'/1X,I5)",
            ),
        ] {
            let got = holl(&[src]).remove(0);
            assert_eq!(got, want, "{src}");
            assert_eq!(got.len(), src.len());
        }
        // Continuation lines of the same statement.
        assert_eq!(
            holl(&["      DATA A, B /3HABC,", "     &   2HDE/"]),
            ["      DATA A, B /'ABC',", "     &   'DE'/"]
        );
        // Left alone: not DATA/FORMAT, not starting a token, too short,
        // with a quote, inside a literal, an assignment.
        for src in [
            "      X = A4H",
            "      DATA X /A4HABCD/",
            "      DATA X /1.4HABCD/",
            "      DATA X /4HAB/",
            "      DATA X /1H",
            "      DATA X /3HA'B/",
            "      DATA X /3HA!B/",
            "      DATA X /2H¡&/",
            "      DATA X /'4HABCD'/",
            "      DATAX = 4",
            "  100 FORMAT (E12.4, I5)",
            "      CALL F(4HABCD)",
        ] {
            assert_eq!(holl(&[src]), [src], "{src}");
        }
        // A statement after a DATA statement is not a DATA statement.
        assert_eq!(
            holl(&["      DATA X /1/", "      X = 1/2HAB"]),
            ["      DATA X /1/", "      X = 1/2HAB"]
        );
    }
}
