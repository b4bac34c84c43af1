//! Macro replacement in one line of Fortran (or of a `#if` expression).
//!
//! What gfortran's traditional-mode preprocessor replaces, with one
//! difference the Fortran user wants: identifiers are replaced outside
//! character literals (`'…'`, `"…"`, doubled quotes inside) and outside
//! Fortran comments (`!` to the end of the line; in fixed form also a
//! `C`, `c`, `*` or `!` in column 1), where gfortran replaces in comments
//! too. As in traditional mode there are no pp-numbers: a macro name
//! right after digits is replaced (`2.0 _d 0` and `2.0_rk` both splice).
//! A function-like macro is
//! replaced only where its name is followed by `(`; its arguments are
//! replaced first, then the body is rescanned with the macro disabled (a
//! macro never replaces itself). `__LINE__` and `__FILE__` give the
//! line's number and the file's name as a C string.

use std::collections::HashMap;

/// A `#define`.
#[derive(Clone, Debug, PartialEq)]
pub struct Macro {
    /// The parameters of a function-like macro (`None`: object-like).
    pub params: Option<Vec<String>>,
    pub body: String,
    /// Where it is defined: file index and 0-based line (`None`: the
    /// command line or dfort.toml).
    pub defined_at: Option<(u32, u32)>,
}

/// The macros in force.
pub type Macros = HashMap<String, Macro>;

/// Where a line comes from, for `__LINE__` and `__FILE__`.
pub struct Place<'a> {
    pub file: &'a str,
    /// 1-based, as `__LINE__` gives it.
    pub line: u32,
}

/// One replaced macro of a line: the source bytes `src` (name and
/// arguments) became the output bytes `out`.
#[derive(Clone, Debug, PartialEq)]
pub struct Replaced {
    pub name: String,
    pub src: std::ops::Range<usize>,
    pub out: std::ops::Range<usize>,
}

/// The scanning mode of a line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Fortran free form: `!` starts a comment.
    Free,
    /// Fortran fixed form: a comment character in column 1, `!` after
    /// column 6; columns 1–6 (label and continuation mark) are kept.
    Fixed,
    /// A `#if` expression: no comments, `defined` already resolved.
    Expression,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The end of the run of digits starting at `i`: traditional mode has no
/// pp-numbers, so a macro name right after digits is replaced (`2.0_rk`
/// with `-D_rk=_8` gives `2.0_8`), as gfortran does.
fn number_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The end of the character literal opened by `b[i]` (past its closing
/// quote, or the end of the line).
fn literal_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == q {
            if b.get(j + 1) == Some(&q) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// Replaces the macros of `line`; returns the text and what was replaced
/// at the top level.
/// The third value says that a function-like macro's call is not closed
/// on the line: gfortran reads its arguments on from the next lines.
pub fn expand_line(
    line: &str,
    mode: Mode,
    macros: &Macros,
    at: &Place,
) -> (String, Vec<Replaced>, bool) {
    expand_from(line, mode, macros, at, 0)
}

/// Whether `name` (ending at `end` of `line`) is a function-like macro
/// whose `(` follows and whose `)` does not.
fn open_call(name: &str, line: &str, end: usize, macros: &Macros) -> bool {
    macros.get(name).is_some_and(|m| m.params.is_some())
        && line[end..].trim_start().starts_with('(')
        && arguments(line, end).is_none()
}

/// [`expand_line`], `depth` times re-entered for a replacement that ends
/// with the name of a function-like macro whose `(` follows in the line.
fn expand_from(
    line: &str,
    mode: Mode,
    macros: &Macros,
    at: &Place,
    depth: usize,
) -> (String, Vec<Replaced>, bool) {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut replaced = Vec::new();
    let mut i = 0;
    if mode == Mode::Fixed {
        if matches!(b.first(), Some(b'c' | b'C' | b'*' | b'!')) {
            return (line.to_string(), replaced, false);
        }
        // Label and continuation columns, unless a tab ends them early.
        let keep = b
            .iter()
            .take(6)
            .position(|&c| c == b'\t')
            .map_or(6, |t| t + 1);
        let keep = keep.min(b.len());
        out.push_str(&line[..keep]);
        i = keep;
    }
    let mut disabled = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b'!' && mode != Mode::Expression {
            out.push_str(&line[i..]);
            break;
        } else if (c == b'\'' || c == b'"') && mode != Mode::Expression {
            let e = literal_end(b, i);
            out.push_str(&line[i..e]);
            i = e;
        } else if c.is_ascii_digit() {
            let e = number_end(b, i);
            out.push_str(&line[i..e]);
            i = e;
        } else if is_ident_start(c) {
            let mut e = i + 1;
            while e < b.len() && is_ident(b[e]) {
                e += 1;
            }
            let name = &line[i..e];
            let start_out = out.len();
            if open_call(name, line, e, macros) {
                // The call's `)` is on a later line: the caller joins it.
                out.push_str(&line[i..]);
                return (out, replaced, true);
            }
            match replace(name, line, e, mode, macros, &mut disabled, at) {
                Some((text, end)) if depth < 32 && calls_on(&text, &line[end..], macros) => {
                    // `#define SQUARE SQR` then `SQUARE(w)`: the name the
                    // replacement ends with takes the line's `(…)`; the
                    // rest of the line counts as replaced.
                    let rest = format!("{text}{}", &line[end..]);
                    let inner = if mode == Mode::Expression {
                        Mode::Expression
                    } else {
                        Mode::Free
                    };
                    out.push_str(&expand_from(&rest, inner, macros, at, depth + 1).0);
                    replaced.push(Replaced {
                        name: name.to_string(),
                        src: i..line.len(),
                        out: start_out..out.len(),
                    });
                    break;
                }
                Some((text, end)) => {
                    out.push_str(&text);
                    replaced.push(Replaced {
                        name: name.to_string(),
                        src: i..end,
                        out: start_out..out.len(),
                    });
                    i = end;
                }
                None => {
                    out.push_str(name);
                    i = e;
                }
            }
        } else {
            let ch_len = line[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&line[i..i + ch_len]);
            i += ch_len;
        }
    }
    (out, replaced, false)
}

/// The replacement of identifier `name` (ending at `end` in `text`) and
/// where the replaced source ends, or `None` when it is no macro here.
fn replace(
    name: &str,
    text: &str,
    end: usize,
    mode: Mode,
    macros: &Macros,
    disabled: &mut Vec<String>,
    at: &Place,
) -> Option<(String, usize)> {
    match name {
        "__LINE__" => return Some((at.line.to_string(), end)),
        "__FILE__" => return Some((format!("\"{}\"", at.file), end)),
        _ => {}
    }
    if disabled.iter().any(|d| d == name) {
        return None;
    }
    let m = macros.get(name)?;
    let (body, end) = match &m.params {
        None => (m.body.clone(), end),
        Some(params) => {
            let (args, close) = arguments(text, end)?;
            let args: Vec<String> =
                if params.is_empty() && args.len() == 1 && args[0].trim().is_empty() {
                    Vec::new()
                } else {
                    args
                };
            if args.len() != params.len() {
                return None;
            }
            // Arguments are replaced before they are substituted.
            let replaced: Vec<String> = args
                .iter()
                .map(|a| rescan(a, mode, macros, disabled, at))
                .collect();
            let body = substitute(&m.body, params, &replaced, &args).replace(super::PASTE, "");
            (body, close)
        }
    };
    disabled.push(name.to_string());
    let text = rescan(&body, mode, macros, disabled, at);
    disabled.pop();
    Some((text, end))
}

/// `text` with its macros replaced, `disabled` ones excepted.
fn rescan(
    text: &str,
    mode: Mode,
    macros: &Macros,
    disabled: &mut Vec<String>,
    at: &Place,
) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'\'' || c == b'"') && mode != Mode::Expression {
            let e = literal_end(b, i);
            out.push_str(&text[i..e]);
            i = e;
        } else if c.is_ascii_digit() {
            let e = number_end(b, i);
            out.push_str(&text[i..e]);
            i = e;
        } else if is_ident_start(c) {
            let mut e = i + 1;
            while e < b.len() && is_ident(b[e]) {
                e += 1;
            }
            match replace(&text[i..e], text, e, mode, macros, disabled, at) {
                Some((r, end)) => {
                    out.push_str(&r);
                    i = end;
                }
                None => {
                    out.push_str(&text[i..e]);
                    i = e;
                }
            }
        } else {
            let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
        }
    }
    out
}

/// The arguments of a macro call whose name ends at `from`: `None` unless
/// `(` follows (after blanks); the arguments as written and the end of
/// the closing `)`.
fn arguments(text: &str, from: usize) -> Option<(Vec<String>, usize)> {
    let b = text.as_bytes();
    let mut i = from;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    if b.get(i) != Some(&b'(') {
        return None;
    }
    i += 1;
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut start = i;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                i = literal_end(b, i);
                continue;
            }
            b'(' => depth += 1,
            b')' if depth == 0 => {
                args.push(text[start..i].to_string());
                return Some((args, i + 1));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(text[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `text` ends with the name of a function-like macro and `rest`
/// starts (after blanks) with `(`.
fn calls_on(text: &str, rest: &str, macros: &Macros) -> bool {
    let text = text.trim_end();
    let name_start = text
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .len();
    let name = &text[name_start..];
    name.as_bytes().first().is_some_and(|&c| is_ident_start(c))
        && macros.get(name).is_some_and(|m| m.params.is_some())
        && rest.trim_start().starts_with('(')
}

/// `body` with each parameter identifier replaced by its argument: the
/// argument as replaced outside character literals, as written inside
/// them (traditional mode substitutes there and never rescans them:
/// `'x = value'` with `x` a parameter).
fn substitute(body: &str, params: &[String], args: &[String], raw: &[String]) -> String {
    let b = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        if b[i] == b'\'' || b[i] == b'"' {
            match quote {
                Some(q) if q == b[i] => quote = None,
                None => quote = Some(b[i]),
                Some(_) => {}
            }
            out.push(b[i] as char);
            i += 1;
        } else if is_ident_start(b[i]) {
            let mut e = i + 1;
            while e < b.len() && is_ident(b[e]) {
                e += 1;
            }
            let word = &body[i..e];
            match params.iter().position(|p| p == word) {
                Some(k) if quote.is_some() => out.push_str(&raw[k]),
                Some(k) => out.push_str(&args[k]),
                None => out.push_str(word),
            }
            i = e;
        } else if b[i].is_ascii_digit() {
            let e = number_end(b, i);
            out.push_str(&body[i..e]);
            i = e;
        } else {
            let ch_len = body[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&body[i..i + ch_len]);
            i += ch_len;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(list: &[(&str, Option<&[&str]>, &str)]) -> Macros {
        list.iter()
            .map(|(n, p, b)| {
                (
                    n.to_string(),
                    Macro {
                        params: p.map(|p| p.iter().map(|s| s.to_string()).collect()),
                        body: b.to_string(),
                        defined_at: None,
                    },
                )
            })
            .collect()
    }

    fn run(line: &str, mode: Mode, m: &Macros) -> String {
        expand_line(
            line,
            mode,
            m,
            &Place {
                file: "f.F",
                line: 7,
            },
        )
        .0
    }

    #[test]
    fn replaces_outside_literals_and_comments() {
        let m = defs(&[("N", None, "10"), ("_d", None, "D")]);
        assert_eq!(
            run("  x = N + 'N' // \"N\" ! N", Mode::Free, &m),
            "  x = 10 + 'N' // \"N\" ! N"
        );
        assert_eq!(
            run("      y = 2.0 _d 0 + 1.0D0", Mode::Fixed, &m),
            "      y = 2.0 D 0 + 1.0D0"
        );
        assert_eq!(run("C     N here", Mode::Fixed, &m), "C     N here");
        assert_eq!(run("     &  N", Mode::Fixed, &m), "     &  10");
        assert_eq!(run("  s = 'it''s N'", Mode::Free, &m), "  s = 'it''s N'");
        assert_eq!(
            run("  k = NN + N_ + N", Mode::Free, &m),
            "  k = NN + N_ + 10"
        );
    }

    #[test]
    fn function_like_macros_take_arguments_and_do_not_recurse() {
        let m = defs(&[
            ("EXCH", Some(&["a", "b"]), "CALL EXCH_XY ( a, b )"),
            ("N", None, "10"),
            ("SELF", None, "SELF + 1"),
            ("TWICE", Some(&["x"]), "(x)*(x)"),
        ]);
        let (text, r, _) = expand_line(
            "      EXCH( theta(1, N), myThid )",
            Mode::Fixed,
            &m,
            &Place {
                file: "f.F",
                line: 1,
            },
        );
        assert_eq!(text, "      CALL EXCH_XY (  theta(1, 10),  myThid  )");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "EXCH");
        assert_eq!(
            &"      EXCH( theta(1, N), myThid )"[r[0].src.clone()],
            "EXCH( theta(1, N), myThid )"
        );
        assert_eq!(run("x = SELF", Mode::Free, &m), "x = SELF + 1");
        assert_eq!(run("x = TWICE(N+1)", Mode::Free, &m), "x = (10+1)*(10+1)");
        // Without parentheses a function-like name is left alone.
        assert_eq!(run("x = TWICE", Mode::Free, &m), "x = TWICE");
    }

    #[test]
    fn line_and_file() {
        let m = Macros::new();
        assert_eq!(
            run("call fatal(__FILE__, __LINE__)", Mode::Free, &m),
            "call fatal(\"f.F\", 7)"
        );
    }
}
