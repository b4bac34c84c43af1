//! Character lengths written on a declarator with an expression
//! (`CHARACTER name*(MAX_LEN)`, `character(len=4) :: s*(n+1)`), which the
//! grammar reads only as `*digits` or `*(*)`.
//!
//! Before parsing, each such length becomes `*(*)` padded with blanks to
//! the same length (no offset moves), so the declaration parses; the
//! lowering takes the length from the original text at the same place
//! ([`written_length`]). Only lengths whose parenthesis closes on the same
//! line are rewritten, outside character literals and comments, in
//! statements that start with `CHARACTER`.

/// `text` with every declarator's parenthesised character length blanked
/// to `*(*)`; `None` when there is none.
pub fn blank_declarator_lengths(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        for (start, end) in declarator_lengths(line) {
            let o = out.get_or_insert_with(|| text.as_bytes().to_vec());
            let (a, b) = (pos + start, pos + end);
            o[a..a + 3].copy_from_slice(b"(*)");
            o[a + 3..b].fill(b' ');
        }
        pos += line.len();
    }
    out.and_then(|o| String::from_utf8(o).ok())
}

/// The byte ranges (of `line`) of the parenthesised lengths `(expr)` after
/// a declarator's `*`, when the line starts a CHARACTER statement.
fn declarator_lengths(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // A label, then the keyword.
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i].is_ascii_digit()) {
        i += 1;
    }
    let keyword = b"character";
    if b.len() < i + keyword.len()
        || !b[i..i + keyword.len()].eq_ignore_ascii_case(keyword)
        || b.get(i + keyword.len()).is_some_and(|&c| ident(c))
    {
        return Vec::new();
    }
    i += keyword.len();
    let mut found = Vec::new();
    let mut quote: Option<u8> = None;
    // Whether the last token was a name (a declarator's, not the keyword's)
    // or a declarator's bounds after it.
    let mut after_name = false;
    let mut bounds = false;
    // Parenthesis depth (a type's `(len=…)`, a declarator's bounds).
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' => quote = Some(c),
            b'!' => break,
            b'(' => {
                bounds = depth == 0 && after_name;
                depth += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && bounds {
                    bounds = false;
                    after_name = true;
                    i += 1;
                    continue;
                }
            }
            b'*' if depth == 0 && after_name => {
                let mut j = i + 1;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                if b.get(j) == Some(&b'(') {
                    if let Some(close) = matching(b, j) {
                        let inner = line[j + 1..close].trim();
                        if inner != "*" && !inner.is_empty() {
                            found.push((j, close + 1));
                        }
                        i = close + 1;
                        after_name = false;
                        continue;
                    }
                }
            }
            _ => {}
        }
        if ident(c) {
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            after_name = depth == 0;
            continue;
        }
        if c != b' ' && c != b')' {
            after_name = false;
        }
        i += 1;
    }
    found
}

/// The `)` closing the `(` at `open`, on the same line, outside literals.
fn matching(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    for (k, &c) in b.iter().enumerate().skip(open) {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            b'\'' | b'"' => quote = Some(c),
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            b'\n' | b'!' => return None,
            _ => {}
        }
    }
    None
}

/// The length a declarator's `*(…)` has in the original text `original`
/// from byte `at` (where the parse text has `*(*)`): the expression
/// inside the parentheses, or `None` when the text there is `*(*)` itself.
pub fn written_length(original: &str, at: usize) -> Option<String> {
    let rest = original.get(at..)?.strip_prefix('*')?;
    let open = rest.len() - rest.trim_start_matches(' ').len();
    let b = rest.as_bytes();
    if b.get(open) != Some(&b'(') {
        return None;
    }
    let close = matching(b, open)?;
    let inner = rest[open + 1..close].trim();
    (inner != "*").then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarator_lengths_with_an_expression_are_blanked() {
        let src = "      character blank*(MNC_MAX_CHAR), b*8, c*(*)\n\
                   character(len=4) :: f*(n+1), g, v(3, 4)*(k)\n\
                   x = a*(b)\n\
                   character*(n) h\n\
                   character p*(m) ! q*(r)\n";
        let out = blank_declarator_lengths(src).expect("rewritten");
        assert_eq!(out.len(), src.len());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "      character blank*(*)           , b*8, c*(*)");
        assert_eq!(lines[1], "character(len=4) :: f*(*)  , g, v(3, 4)*(*)");
        // An expression, a type-level length, a comment: unchanged.
        assert_eq!(lines[2], "x = a*(b)");
        assert_eq!(lines[3], "character*(n) h");
        assert_eq!(lines[4], "character p*(*) ! q*(r)");
        assert_eq!(
            written_length(src, src.find("*(MNC").unwrap()).as_deref(),
            Some("MNC_MAX_CHAR")
        );
        assert_eq!(written_length(src, src.find("*(*)").unwrap()), None);
    }

    #[test]
    fn nothing_to_rewrite_gives_none() {
        for s in [
            "      CHARACTER*(MAX_LEN_MBUF) msgBuf\n",
            "      CHARACTER*8 E1, f*(*)\n",
            "      print *, 'character a*(n)'\n",
            "      characterx = y*(z)\n",
        ] {
            assert_eq!(blank_declarator_lengths(s), None, "{s}");
        }
    }
}
