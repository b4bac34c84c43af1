//! Free-form text before parsing: real literals written with blanks
//! around their exponent letter (`0. D 0`, `9. D 0`), which MITgcm's
//! free-form files get from the `_d` macro (`0. _d 0`) and which its build
//! joins after the preprocessor (`set64bitConst.sh`), become one token.
//!
//! Blanks are significant in free form, so such a literal is never valid
//! Fortran as written: joining it changes no program that parses. The
//! blanks move to the literal's end (same length, no offset moves), outside
//! character literals and comments; a line that starts inside a character
//! literal continued from the line before is left as it is.

use crate::fixed_form::squeeze_real_literals;

/// `text` with the blanks inside its real literals moved to their ends, or
/// `None` when there are none.
pub fn join_real_literals(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut pos = 0;
    let mut in_string = false;
    for line in text.split_inclusive('\n') {
        if !in_string {
            if let Some(joined) = squeeze_real_literals(line) {
                let o = out.get_or_insert_with(|| text.to_string());
                o.replace_range(pos..pos + line.len(), &joined);
            }
        }
        in_string = ends_inside_string(line, in_string);
        pos += line.len();
    }
    out
}

/// Whether `line` ends inside a character literal continued on the next
/// line (`'abc&`), given whether it starts inside one.
fn ends_inside_string(line: &str, starts_inside: bool) -> bool {
    let mut quote: Option<char> = None;
    let mut chars = line.trim_start().chars().peekable();
    if starts_inside {
        // The continued literal's quote is not known: take the first
        // quote character closing it.
        if chars.peek() == Some(&'&') {
            chars.next();
        }
        quote = Some('?');
    }
    let mut last = ' ';
    for c in chars {
        match quote {
            Some(q) if c == q || (q == '?' && (c == '\'' || c == '"')) => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '!' => return false,
            None => {}
        }
        if !c.is_whitespace() {
            last = c;
        }
    }
    quote.is_some() && last == '&'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_with_blanks_around_the_exponent_are_joined() {
        let src = "    objf(bi,bj)= 0. D 0\n    x = y / 9. D 0 ! 2. D 0\n";
        assert_eq!(
            join_real_literals(src).as_deref(),
            Some("    objf(bi,bj)= 0.D0  \n    x = y / 9.D0   ! 2. D 0\n")
        );
    }

    #[test]
    fn strings_names_and_continued_strings_stay() {
        for src in [
            "print *, '2.0 D 0'\n",
            "x = a1.0 D 0\n",
            "x = 2.0d0\n",
            "print *, 'a&\n  &2.0 D 0'\n",
            "x = a .and. b\n",
        ] {
            assert_eq!(join_real_literals(src), None, "{src:?}");
        }
    }
}
