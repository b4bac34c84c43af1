//! Values the reverse sweep holds already: each statement's adjoint
//! computes the subexpressions its partials share into `dfort_v<k>`
//! ([`crate::value_numbering`]); when the adjoints of consecutive
//! statements of a block share the same one (Bratu's three updates of
//! `f(i - 1)`, `f(i)`, `f(i + 1)` each reading `exp(x(i)/(1 + p*x(i)))`),
//! the temporary still holds it and is not computed again.
//!
//! Contract: over one block's reverse lines, in the order they run, a
//! line `dfort_v<k> = E` is left out when an earlier line of the block
//! set `dfort_v<k> = E` (the same text) and every line since is a comment,
//! another `dfort_v<j> = E'`, or an assignment to an adjoint variable or a
//! generator temporary that `E` does not name (`E` is a primal
//! subexpression: it reads no adjoint, and adjoints share no storage with
//! primal variables). Any other line (a call, a pop, an assignment to a
//! primal variable, which may be storage-associated with what `E` reads)
//! and any construct (a loop, a branch) ends what is known; the lines
//! inside a construct are their own blocks. What is left out computed the
//! same value from the same operands: nothing changes but the work.

use super::sweep::{assigned, mentions, Line};

/// `lines` (a block's reverse sweep) without the value-numbering
/// temporaries' assignments that give them the value they hold;
/// `adjoint` says whether a name is an adjoint variable.
pub(super) fn without_recomputed(lines: Vec<Line>, adjoint: impl Fn(&str) -> bool) -> Vec<Line> {
    // The temporaries known to hold a value, and its text.
    let mut held: Vec<(String, String)> = Vec::new();
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let Line::Plain(text) = &line else {
            held.clear();
            out.push(line);
            continue;
        };
        if crate::fortran::is_comment_line(text) {
            out.push(line);
            continue;
        }
        match assigned(text) {
            Some((target, value)) if is_value_temp(target) => {
                if held.iter().any(|(t, v)| t == target && v == value) {
                    continue;
                }
                held.retain(|(t, v)| t != target && !mentions(v, target));
                held.push((target.to_string(), value.to_string()));
            }
            Some((target, _)) if target.starts_with("dfort_") || adjoint(target) => {
                held.retain(|(_, v)| !mentions(v, target));
            }
            _ => held.clear(),
        }
        out.push(line);
    }
    out
}

/// `dfort_v<k>`.
fn is_value_temp(name: &str) -> bool {
    name.strip_prefix("dfort_v")
        .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[&str]) -> Vec<Line> {
        lines.iter().map(|l| Line::Plain(l.to_string())).collect()
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| match l {
                Line::Plain(s) => s.clone(),
                _ => "<construct>".to_string(),
            })
            .collect()
    }

    #[test]
    fn a_temporary_holding_its_value_is_not_computed_again() {
        let adjoint = |n: &str| n == "xb" || n == "pb";
        let lines = plain(&[
            "dfort_v1 = 1.0 + p * x(i)",
            "dfort_v2 = exp(x(i) / dfort_v1)",
            "xb(i) = xb(i) + fb(i) * dfort_v2",
            "dfort_tb1 = fb(i) * dfort_v2",
            "! f.f:9: f(i) = …",
            "dfort_v1 = 1.0 + p * x(i)",
            "dfort_v2 = exp(x(i) / dfort_v1)",
            "pb = pb + dfort_tb1 * dfort_v2",
        ]);
        let out = texts(&without_recomputed(lines, adjoint));
        assert_eq!(
            out,
            [
                "dfort_v1 = 1.0 + p * x(i)",
                "dfort_v2 = exp(x(i) / dfort_v1)",
                "xb(i) = xb(i) + fb(i) * dfort_v2",
                "dfort_tb1 = fb(i) * dfort_v2",
                "! f.f:9: f(i) = …",
                "pb = pb + dfort_tb1 * dfort_v2",
            ]
        );
    }

    #[test]
    fn what_may_change_its_operands_ends_what_is_held() {
        let adjoint = |n: &str| n == "xb";
        for between in [
            "call dfort_pop(x(i))",
            "x(i) = 2.0d0",
            "q = 1.0d0",
            "dfort_f1 = 2.0d0",
            "where (m) xb = 0.0d0",
        ] {
            let lines = plain(&[
                "dfort_v1 = 1.0 + dfort_f1 * x(i)",
                between,
                "dfort_v1 = 1.0 + dfort_f1 * x(i)",
            ]);
            assert_eq!(
                without_recomputed(lines, adjoint).len(),
                3,
                "dropped after {between}"
            );
        }
        // A construct between: the second stays.
        let mut lines = plain(&["dfort_v1 = exp(x(i))"]);
        lines.push(Line::Branch(Vec::new()));
        lines.extend(plain(&["dfort_v1 = exp(x(i))"]));
        assert_eq!(without_recomputed(lines, adjoint).len(), 3);
        // Another value in the temporary, or one it was computed from
        // given another: the second stays.
        let lines = plain(&[
            "dfort_v1 = exp(x(i))",
            "dfort_v2 = x(i) / dfort_v1",
            "dfort_v1 = exp(x(j))",
            "dfort_v2 = x(i) / dfort_v1",
            "dfort_v1 = exp(x(i))",
        ]);
        assert_eq!(without_recomputed(lines, adjoint).len(), 5);
    }
}
