//! Printed Fortran expressions combined with only the parentheses that
//! precedence needs: the chain rule's products `v̄ · ∂v/∂c` and sums
//! `Σ ∂v/∂cᵢ · ċᵢ`, with multiplications by one left out and signs
//! pulled to the front.
//!
//! Every combination keeps the value and the order of evaluation of the
//! fully parenthesised form: `a * b` with `b` a product or quotient keeps
//! `(b)` (`m * (1 / 2)` is not `m * 1 / 2` with integers), a sum is
//! parenthesised wherever it is an operand, and a leading minus is moved
//! only across multiplications and divisions (`-(a * b)` and `(-a) * b`
//! are the same number). The one change of rounding is `m * (1.0d0 / b)`
//! written `m / b`, as a person writes it.

/// What binds loosest at the top level of a printed expression (outside
/// parentheses and character literals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// No operator: a name, a literal, a reference, a call, `( … )`.
    Primary,
    /// Powers only: `x**2`.
    Power,
    /// Multiplications and divisions (and powers), no sign in front.
    Product,
    /// A minus in front of a primary, power or product: `-sin(x)`.
    Negated,
    /// Anything else: additions, subtractions, relations, logical
    /// operators, concatenation, a leading plus, or text not understood.
    Loose,
}

/// The form of `s`.
pub fn form(s: &str) -> Form {
    let c: Vec<char> = s.trim().chars().collect();
    if c.is_empty() {
        return Form::Loose;
    }
    let (mut power, mut product, mut lead_minus) = (false, false, false);
    // Whether the next token must be an operand (at the start and after
    // an operator).
    let mut want_operand = true;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == ' ' {
            i += 1;
            continue;
        }
        if want_operand {
            match ch {
                '-' if i == 0 => {
                    lead_minus = true;
                    i += 1;
                    continue;
                }
                '+' | '-' => return Form::Loose,
                _ => match operand_end(&c, i) {
                    Some(end) => {
                        i = end;
                        want_operand = false;
                    }
                    None => return Form::Loose,
                },
            }
            continue;
        }
        // An operator.
        match (ch, c.get(i + 1)) {
            ('*', Some('*')) => {
                power = true;
                i += 2;
            }
            ('/', Some('/' | '=')) => return Form::Loose,
            ('*' | '/', _) => {
                product = true;
                i += 1;
            }
            _ => return Form::Loose,
        }
        want_operand = true;
    }
    if want_operand {
        return Form::Loose;
    }
    match (lead_minus, product, power) {
        (true, _, _) => Form::Negated,
        (false, true, _) => Form::Product,
        (false, false, true) => Form::Power,
        (false, false, false) => Form::Primary,
    }
}

/// Where the operand starting at `i` ends (a name with its subscripts,
/// arguments and components, a literal, a parenthesised expression);
/// `None` when no operand starts there.
fn operand_end(c: &[char], mut i: usize) -> Option<usize> {
    let word = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    match c[i] {
        '\'' | '"' => {
            let q = c[i];
            let close = c[i + 1..].iter().position(|&x| x == q)?;
            i += close + 2;
        }
        '(' | '[' => i = group_end(c, i)?,
        '.' if c.get(i + 1).is_some_and(|x| x.is_ascii_alphabetic()) => {
            // `.true.` or `.false.`; `.not.` and the like are operators.
            let w: String = c[i + 1..]
                .iter()
                .take_while(|x| x.is_ascii_alphabetic())
                .collect();
            let end = i + 1 + w.len();
            if c.get(end) != Some(&'.')
                || !matches!(w.to_ascii_lowercase().as_str(), "true" | "false")
            {
                return None;
            }
            i = end + 1;
            if c.get(i) == Some(&'_') {
                while i < c.len() && word(c[i]) {
                    i += 1;
                }
            }
        }
        ch if ch.is_ascii_digit() || ch == '.' => {
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.') {
                i += 1;
            }
            if i < c.len() && matches!(c[i], 'e' | 'E' | 'd' | 'D' | 'q' | 'Q') {
                i += 1;
                if i < c.len() && matches!(c[i], '+' | '-') {
                    i += 1;
                }
                while i < c.len() && c[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < c.len() && c[i] == '_' {
                while i < c.len() && word(c[i]) {
                    i += 1;
                }
            }
        }
        ch if ch.is_ascii_alphabetic() || ch == '_' => {
            while i < c.len() && word(c[i]) {
                i += 1;
            }
        }
        _ => return None,
    }
    // Subscripts, arguments, components.
    loop {
        match c.get(i) {
            Some('(') => i = group_end(c, i)?,
            Some('%') => {
                i += 1;
                if !c.get(i).is_some_and(|x| x.is_ascii_alphabetic()) {
                    return None;
                }
                while i < c.len() && word(c[i]) {
                    i += 1;
                }
            }
            _ => return Some(i),
        }
    }
}

/// The index after the bracket matching the one at `i` (character
/// literals inside skipped).
fn group_end(c: &[char], mut i: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    while i < c.len() {
        let ch = c[i];
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None => match ch {
                '\'' | '"' => quote = Some(ch),
                '(' | '[' => depth += 1,
                ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

fn paren(s: &str) -> String {
    format!("({s})")
}

/// `s` where it is an operand of a template (an intrinsic's partial,
/// `{0}**2`): parenthesised unless primary.
pub fn operand(s: &str) -> String {
    match form(s) {
        Form::Primary => s.trim().to_string(),
        _ => paren(s.trim()),
    }
}

/// `s` as the right operand of `*` or `/`.
fn right(s: &str) -> String {
    match form(s) {
        Form::Primary | Form::Power => s.trim().to_string(),
        _ => paren(s.trim()),
    }
}

/// `s` as the left operand of `*` or `/` (a minus in front is taken care
/// of by the caller).
fn left(s: &str) -> String {
    match form(s) {
        Form::Primary | Form::Power | Form::Product => s.trim().to_string(),
        _ => paren(s.trim()),
    }
}

/// `s` without a minus in front, and whether there was one.
fn sign(s: &str) -> (bool, &str) {
    let t = s.trim();
    match form(t) {
        Form::Negated => (true, t[1..].trim_start()),
        _ => (false, t),
    }
}

fn signed(negative: bool, body: String) -> String {
    if negative {
        format!("-{body}")
    } else {
        body
    }
}

fn is_one(s: &str) -> bool {
    matches!(s.trim(), "1.0d0" | "1.0D0" | "1.d0" | "1d0")
}

/// `-s`.
pub fn neg(s: &str) -> String {
    match form(s) {
        Form::Negated => sign(s).1.to_string(),
        Form::Primary | Form::Power | Form::Product => format!("-{}", s.trim()),
        Form::Loose => format!("-{}", paren(s.trim())),
    }
}

/// `a * b`, evaluated as the fully parenthesised `(a) * (b)` is; ones
/// left out, signs in front, `a * (1.0d0 / c)` written `a / c`.
pub fn times(a: &str, b: &str) -> String {
    let (na, a) = sign(a);
    let (nb, b) = sign(b);
    let negative = na != nb;
    let alone = |x: &str| match negative {
        true => neg(x),
        false => x.to_string(),
    };
    if is_one(b) {
        return alone(a);
    }
    if is_one(a) {
        return alone(b);
    }
    for (x, y) in [(a, b), (b, a)] {
        if let Some(den) = y.strip_prefix("1.0d0 / ") {
            if matches!(form(den), Form::Primary | Form::Power) {
                return signed(negative, format!("{} / {}", left(x), den.trim()));
            }
        }
    }
    signed(negative, format!("{} * {}", left(a), right(b)))
}

/// `a / b`.
pub fn over(a: &str, b: &str) -> String {
    let (na, a) = sign(a);
    let (nb, b) = sign(b);
    signed(na != nb, format!("{} / {}", left(a), right(b)))
}

/// `s` as a term of a sum: parentheses around all of it dropped when
/// what they hold is a product, a power or a primary (`(2 * x)` → `2 *
/// x`).
pub fn term(s: &str) -> String {
    let t = s.trim();
    let inner = t
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .filter(|_| crate::fortran::matching_paren(t, 0) == Some(t.len() - 1));
    match inner.map(|i| (i, form(i))) {
        Some((i, Form::Primary | Form::Power | Form::Product)) => i.trim().to_string(),
        _ => t.to_string(),
    }
}

/// `a + b`, with `a + -c` written `a - c`.
pub fn plus(a: &str, b: &str) -> String {
    let a = match form(a) {
        Form::Loose if a.trim_start().starts_with('+') => paren(a.trim()),
        _ => a.trim().to_string(),
    };
    match form(b) {
        Form::Negated => format!("{a} - {}", sign(b).1),
        Form::Loose => format!("{a} + {}", paren(b.trim())),
        _ => format!("{a} + {}", b.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_loses_the_parentheses_precedence_does_not_need() {
        assert_eq!(term("(2 * x(i))"), "2 * x(i)");
        assert_eq!(term("(a + b)"), "(a + b)");
        assert_eq!(term("(a) * (b)"), "(a) * (b)");
        assert_eq!(term("(-a)"), "(-a)");
    }

    #[test]
    fn forms() {
        for (s, f) in [
            ("x", Form::Primary),
            ("x(i + 1)", Form::Primary),
            ("(a + b)", Form::Primary),
            ("exp(x / (1.0 + p(2) * x))", Form::Primary),
            ("1.0d-3", Form::Primary),
            ("2.5e+10_8", Form::Primary),
            ("1.0d0", Form::Primary),
            (".true.", Form::Primary),
            ("'a + b'", Form::Primary),
            ("p%x", Form::Primary),
            ("x**2", Form::Power),
            ("cos(x)**2", Form::Power),
            ("h * h * p(1) / 12.0", Form::Product),
            ("a**2 * b", Form::Product),
            ("-sin(x)", Form::Negated),
            ("-1.0d0", Form::Negated),
            ("-a * b", Form::Negated),
            ("-x**2", Form::Negated),
            ("a + b", Form::Loose),
            ("a - 1.0d-3", Form::Loose),
            ("-a + b", Form::Loose),
            ("a * b - c", Form::Loose),
            ("a > b", Form::Loose),
            ("a .and. b", Form::Loose),
            ("a // b", Form::Loose),
            ("a /= b", Form::Loose),
            ("+a", Form::Loose),
            ("(a", Form::Loose),
            ("", Form::Loose),
            ("a(1:2)", Form::Primary),
            ("x1e", Form::Primary),
        ] {
            assert_eq!(form(s), f, "{s}");
        }
    }

    #[test]
    fn products_keep_the_order_and_the_parentheses_they_need() {
        assert_eq!(times("fb", "1.0d0"), "fb");
        assert_eq!(times("fb", "-1.0d0"), "-fb");
        assert_eq!(times("-fb", "-1.0d0"), "fb");
        assert_eq!(times("fb", "2"), "fb * 2");
        assert_eq!(times("fb", "h * h / 12.0"), "fb * (h * h / 12.0)");
        assert_eq!(times("fb * 2", "x"), "fb * 2 * x");
        assert_eq!(times("fb", "1.0d0 / (1.0 + x)"), "fb / (1.0 + x)");
        assert_eq!(times("fb", "1.0d0 / cos(x)**2"), "fb / cos(x)**2");
        assert_eq!(
            times("fb", "1.0d0 / (2.0d0 * sqrt(x))"),
            "fb / (2.0d0 * sqrt(x))"
        );
        assert_eq!(times("fb", "-((a / b) / b)"), "-fb * ((a / b) / b)");
        assert_eq!(times("-fb", "-sin(x)"), "fb * sin(x)");
        assert_eq!(
            times("fb", "1.0d0 - tanh(x)**2"),
            "fb * (1.0d0 - tanh(x)**2)"
        );
        assert_eq!(times("a + b", "c"), "(a + b) * c");
        assert_eq!(times("fb", "x**2"), "fb * x**2");
        assert_eq!(times("1.0d0", "xd"), "xd");
        assert_eq!(times("i / 2", "xd"), "i / 2 * xd");
        assert_eq!(times("2", "xd + yd"), "2 * (xd + yd)");
        assert_eq!(times("1.0d0", "xd + yd"), "xd + yd");
        assert_eq!(times("-1.0d0", "xd + yd"), "-(xd + yd)");
        assert_eq!(times("1.0d0 / 12.0", "h * pd"), "h * pd / 12.0");
    }

    #[test]
    fn sums_and_negations() {
        assert_eq!(plus("xb(i)", "fb * 2"), "xb(i) + fb * 2");
        assert_eq!(plus("xb(i)", "-fb * 2"), "xb(i) - fb * 2");
        assert_eq!(plus("xb(i)", "a - b"), "xb(i) + (a - b)");
        assert_eq!(neg("a + b"), "-(a + b)");
        assert_eq!(neg("-a"), "a");
        assert_eq!(neg("a * b"), "-a * b");
        assert_eq!(over("-m", "b + c"), "-m / (b + c)");
    }

    /// The forms agree with gfortran's reading: every simplified product
    /// evaluates as the fully parenthesised one (checked by the
    /// adjoint tests numerically; here the parse of signs).
    #[test]
    fn a_minus_inside_a_product_is_not_a_leading_sign() {
        assert_eq!(form("a * (-b)"), Form::Product);
        assert_eq!(sign("-a * b"), (true, "a * b"));
    }
}
