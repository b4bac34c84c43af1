//! The reset of an assignment's own adjoint, folded away. The adjoint of
//! `v = f(v, w…)` is written first as `t = v̄`, `v̄ = 0`, then one
//! `c̄ = c̄ ± …` line per operand (reading `t`). Two rewrites of those
//! lines keep their values and read more like hand-written code:
//!
//! - [`fold_in_place`]: when the only lines naming `v̄`'s variable are the
//!   adds into `v̄` itself, the other lines read `v̄` in place of the copy
//!   and one last line gives `v̄` its new value, `v̄ = v̄ * (∂f/∂v…)`:
//!   no copy, no reset, one pass (an array copy and its passes saved
//!   under a WHERE, say).
//! - [`fold_reset`]: otherwise a reset followed by the first add into `v̄`
//!   is one assignment (`0 + x` is `x`).
//!
//! Both work on the printed lines and give up (leaving them as they are)
//! on any line they do not recognise.

use super::sweep::{assigned, mentions};
use crate::precedence::{neg, plus, term, times};

/// `body[head]` is `tb = lb`, `body[head + 1]` the reset `under lb =
/// 0.0d0` (`under` is `where (mask) ` or empty) unless v̄ passes through
/// (`v = v ± e…`); the lines after are the operands' adds, reading `tb`. Rewrites them to read `lb` and to end
/// with one assignment of `lb`'s new value, when that keeps every value:
/// every line naming `lb`'s variable is an add `under lb = lb ± x` whose
/// `x` does not name it, nothing later assigns what `x` reads, and every
/// line is an assignment. Returns whether it did.
pub(super) fn fold_in_place(
    body: &mut Vec<String>,
    head: usize,
    tb: &str,
    lb: &str,
    under: &str,
) -> bool {
    let base = lb
        .split(|c: char| !crate::fortran::is_name_char(c))
        .next()
        .unwrap_or_default();
    if base.is_empty() || body.get(head) != Some(&format!("{tb} = {lb}")) {
        return false;
    }
    // Without the reset v̄ passes through: its old value is one term.
    let reset = body.get(head + 1) == Some(&format!("{under}{lb} = 0.0d0"));
    let rest = &body[head + 1 + usize::from(reset)..];
    let subscripts_written = |target: &str| target != base && mentions(lb, target);
    // Each line's target (after the mask) and value; any other line ends
    // the attempt.
    let mut parts = Vec::with_capacity(rest.len());
    for line in rest {
        let code = line.trim();
        let code = code.strip_prefix(under).unwrap_or(code);
        let Some((target, _)) = assigned(code) else {
            return false;
        };
        if code.contains(&format!("{tb}(")) || subscripts_written(target) {
            return false;
        }
        parts.push((code, target));
    }
    let mut terms: Vec<(bool, &str)> = Vec::new();
    if !reset {
        terms.push((false, tb));
    }
    let mut others = Vec::new();
    for (k, (code, target)) in parts.iter().enumerate() {
        if !mentions(code, base) {
            others.push(rest[k].replace_whole(tb, lb));
            continue;
        }
        // The adds may name the whole array without its section `(:)`.
        let Some(added) = [Some(lb), whole_array(lb)]
            .into_iter()
            .flatten()
            .find_map(|t| code.strip_prefix(&format!("{t} = {t} ")))
        else {
            return false;
        };
        let (negative, x) = match (added.strip_prefix("+ "), added.strip_prefix("- ")) {
            (Some(x), _) => (false, x),
            (_, Some(x)) => (true, x),
            _ => return false,
        };
        let later_writes = parts[k + 1..].iter().any(|(_, t)| mentions(x, t));
        if mentions(x, base) || later_writes || *target != base {
            return false;
        }
        terms.push((negative, x));
    }
    // `tb * d₁ ± tb * d₂ …` is `lb * (d₁ ± d₂ …)` (`tb` alone is `tb *
    // 1`); otherwise the sum; no term at all is the reset.
    let factor = format!("{tb} * ");
    let factored = terms
        .iter()
        .all(|(_, x)| *x == tb || x.starts_with(&factor));
    let sum = terms.iter().fold(String::new(), |acc, &(negative, x)| {
        let x = match factored {
            true if x == tb => "1.0d0".to_string(),
            true => term(&x[factor.len()..]),
            false => x.replace_whole(tb, lb),
        };
        let x = if negative { neg(&x) } else { x };
        if acc.is_empty() {
            x
        } else {
            plus(&acc, &x)
        }
    });
    let value = match (terms.is_empty(), factored) {
        (true, _) => "0.0d0".to_string(),
        (false, true) => times(lb, &sum),
        (false, false) => sum,
    };
    let lead = rest
        .first()
        .map_or("", |l| &l[..l.len() - l.trim_start().len()]);
    if value != lb {
        others.push(format!("{lead}{under}{lb} = {value}"));
    }
    body.truncate(head);
    body.extend(others);
    true
}

/// `v̄ = 0` at `body[reset]` then `v̄ = v̄ + x` as the next line naming
/// v̄'s variable: one line `v̄ = x` where the reset was (0 + x is x).
/// Only when no line between names that variable at all (another element
/// of it may be the same element).
pub(super) fn fold_reset(body: &mut Vec<String>, reset: usize, lb: &str) {
    let base: String = lb
        .chars()
        .take_while(|&c| crate::fortran::is_name_char(c))
        .collect();
    let Some(k) = (reset + 1..body.len()).find(|&k| mentions(&body[k], &base)) else {
        return;
    };
    let lead = body[k].len() - body[k].trim_start().len();
    let added = body[k]
        .trim_start()
        .strip_prefix(&format!("{lb} = {lb} + "));
    if let Some(x) = added {
        let line = format!("{}{lb} = {x}", &body[k][..lead]);
        body[k] = line;
        body.remove(reset);
    }
}

/// `r` without its section when the section is all of the array's
/// elements: `xb` of `xb(:)`, `pb%u` of `pb%u(:, :)`.
fn whole_array(r: &str) -> Option<&str> {
    let (array, section) = r.strip_suffix(')')?.rsplit_once('(')?;
    section.split(',').all(|d| d.trim() == ":").then_some(array)
}

/// Text with one whole name replaced by another.
trait ReplaceWhole {
    fn replace_whole(&self, name: &str, by: &str) -> String;
}

impl ReplaceWhole for str {
    fn replace_whole(&self, name: &str, by: &str) -> String {
        let mut out = String::with_capacity(self.len());
        let mut last = 0;
        for i in crate::fortran::whole_name_at(self, name) {
            out.push_str(&self[last..i]);
            out.push_str(by);
            last = i + name.len();
        }
        out.push_str(&self[last..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{fold_in_place, fold_reset};

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_reset_then_an_add_becomes_one_assignment() {
        let mut body = lines(&[
            "dfort_tb = yb(i)",
            "  yb(i) = 0.0d0",
            "xb(i) = xb(i) + dfort_tb * y(i)",
            "  yb(i) = yb(i) + dfort_tb * x(i)",
        ]);
        fold_reset(&mut body, 1, "yb(i)");
        assert_eq!(
            body,
            lines(&[
                "dfort_tb = yb(i)",
                "xb(i) = xb(i) + dfort_tb * y(i)",
                "  yb(i) = dfort_tb * x(i)",
            ])
        );
    }

    #[test]
    fn another_element_of_the_array_between_keeps_the_reset() {
        // yb(j) may be yb(i): the add into it must see the reset.
        let before = lines(&[
            "dfort_tb = yb(i)",
            "yb(i) = 0.0d0",
            "yb(j) = yb(j) + dfort_tb * y(i)",
            "yb(i) = yb(i) + dfort_tb * x(i)",
        ]);
        let mut body = before.clone();
        fold_reset(&mut body, 1, "yb(i)");
        assert_eq!(body, before);
        // Nor does a line that reads it some other way (not an add).
        let before = lines(&["dfort_tb = ab", "ab = 0.0d0", "cb = cb + ab"]);
        let mut body = before.clone();
        fold_reset(&mut body, 1, "ab");
        assert_eq!(body, before);
    }

    #[test]
    fn adds_into_the_target_alone_become_one_product_after_the_others() {
        let mut body = lines(&[
            "dfort_ta1 = xb(:)",
            "where (m) xb(:) = 0.0d0",
            "where (m) xb = xb + dfort_ta1 * x",
            "where (m) yb = yb + dfort_ta1 * 2.0d0",
            "where (m) xb = xb + dfort_ta1",
            "where (m) xb = xb - dfort_ta1 * sin(x)",
            "sb = sb + sum(dfort_ta1 * y, mask=m)",
        ]);
        assert!(fold_in_place(
            &mut body,
            0,
            "dfort_ta1",
            "xb(:)",
            "where (m) "
        ));
        assert_eq!(
            body,
            lines(&[
                "where (m) yb = yb + xb(:) * 2.0d0",
                "sb = sb + sum(xb(:) * y, mask=m)",
                "where (m) xb(:) = xb(:) * (x + 1.0d0 - sin(x))",
            ])
        );
        // Not all of the form `tb * d`: the sum, reading xb.
        let mut body = lines(&[
            "dfort_tb = xb(i)",
            "xb(i) = 0.0d0",
            "dfort_tb1 = dfort_tb * c",
            "xb(i) = xb(i) + dfort_tb1 / x(i)",
            "xb(i) = xb(i) + dfort_tb * x(i)",
        ]);
        assert!(fold_in_place(&mut body, 0, "dfort_tb", "xb(i)", ""));
        assert_eq!(
            body,
            lines(&[
                "dfort_tb1 = xb(i) * c",
                "xb(i) = dfort_tb1 / x(i) + xb(i) * x(i)",
            ])
        );
    }

    #[test]
    fn an_add_of_the_copy_alone_leaves_the_target_as_it_is_and_no_add_resets_it() {
        let mut body = lines(&[
            "dfort_tb = ab",
            "ab = 0.0d0",
            "ab = ab + dfort_tb",
            "cb = cb + dfort_tb * 2",
        ]);
        assert!(fold_in_place(&mut body, 0, "dfort_tb", "ab", ""));
        assert_eq!(body, lines(&["cb = cb + ab * 2"]));
        let mut body = lines(&[
            "dfort_tb = fb(i)",
            "fb(i) = 0.0d0",
            "xb(i) = xb(i) + dfort_tb",
        ]);
        assert!(fold_in_place(&mut body, 0, "dfort_tb", "fb(i)", ""));
        assert_eq!(body, lines(&["xb(i) = xb(i) + fb(i)", "fb(i) = 0.0d0"]));
    }

    #[test]
    fn without_the_reset_the_old_value_is_one_term() {
        // x = x + x * y
        let mut body = lines(&[
            "dfort_tb = xb",
            "xb = xb + dfort_tb * y",
            "yb = yb + dfort_tb * x",
        ]);
        assert!(fold_in_place(&mut body, 0, "dfort_tb", "xb", ""));
        assert_eq!(body, lines(&["yb = yb + xb * x", "xb = xb * (1.0d0 + y)"]));
    }

    #[test]
    fn what_may_be_the_target_or_change_a_term_keeps_the_copy() {
        for case in [
            // Another element of the array may be this one.
            &[
                "dfort_tb = xb(i)",
                "xb(i) = 0.0d0",
                "xb(j) = xb(j) + dfort_tb * y",
                "xb(i) = xb(i) + dfort_tb * x(i)",
            ][..],
            // A term read after a later line changes what it reads.
            &[
                "dfort_tb = xb",
                "xb = 0.0d0",
                "dfort_tb1 = dfort_tb * a",
                "xb = xb + dfort_tb1 * b",
                "dfort_tb1 = dfort_tb * c",
                "yb = yb + dfort_tb1",
            ][..],
            // A line that is not an assignment.
            &[
                "dfort_ta1 = xb",
                "xb = 0.0d0",
                "do dfort_p = 1, 3",
                "xb = xb + dfort_ta1 * x",
            ][..],
            // The copy indexed.
            &[
                "dfort_ta1 = xb",
                "xb = 0.0d0",
                "yb(1) = yb(1) + dfort_ta1(1)",
                "xb = xb + dfort_ta1 * x",
            ][..],
        ] {
            let before = lines(case);
            let mut body = before.clone();
            let tb = case[0].split(" = ").next().unwrap_or_default();
            let lb = case[0].split(" = ").nth(1).unwrap_or_default();
            assert!(!fold_in_place(&mut body, 0, tb, lb, ""), "{case:?}");
            assert_eq!(body, before);
        }
    }
}
