//! The reverse sweep as the generator builds it — lines and the
//! constructs that run them backwards (a popped arm, a replayed counted
//! loop, a loop run a popped or computed number of times) — and its
//! writing as Fortran.
//!
//! Contract: a `Vec<Line>` is in the order the lines run; [`emit`] writes
//! it at the writer's indentation. The arm variable is `dfort_branch`; a
//! replayed loop runs `k` from its trip count minus one down to 0 and sets
//! the original index from it.

use crate::fortran::Writer;

/// How many partial sums a reversed loop's accumulation is split into.
pub(super) const PARTS: usize = 4;
/// The most lines a reversed loop's body may have for its sums to be
/// split ([`accumulations`]).
const MAX_BODY: usize = 6;

/// A reverse-sweep line or construct.
pub(super) enum Line {
    Plain(String),
    /// Pop the arm id and run that arm's reverse sweep.
    Branch(Vec<Vec<Line>>),
    /// Evaluate the construct's conditions again and run the reverse
    /// sweep of the arm they choose: `open` starts it (`select case (s)`;
    /// none for an IF), `heads[i]` opens arm `i` (`if (c) then`, `else if
    /// (c) then`, `else`; `case (…)`), `close` ends it.
    Retest {
        open: Option<String>,
        heads: Vec<String>,
        arms: Vec<Vec<Line>>,
        close: String,
    },
    /// Replay a counted loop backwards from its bounds.
    CountedLoop {
        /// The reversed loop's own iteration variable.
        k: String,
        var: String,
        start: String,
        end: String,
        step: String,
        /// Whether the index was pushed before the loop (popped after).
        save: bool,
        /// Whether no other variable shares the index's memory (what
        /// the body's lines write is then known from their text).
        var_alone: bool,
        /// The real(8) scalar adjoints the body only adds to
        /// ([`accumulations`]): the loop is written four iterations at a
        /// time, each adding into a partial sum of its own.
        sums: Vec<String>,
        body: Vec<Line>,
    },
    /// The reverse sweep of a loop checkpointed with a binomial schedule
    /// ([`super::binomial`]).
    Binomial(Box<super::binomial::Checkpointed>),
    /// Get a trip count and run the body that many times.
    CountLoop {
        k: String,
        counter: String,
        /// How to compute the count (a counted WHILE loop); popped when
        /// `None`.
        count: Option<String>,
        /// Lines run once the count is known (a counter's final value).
        then: Vec<String>,
        body: Vec<Line>,
    },
}

impl Line {
    /// `call dfort_pop(item)`.
    pub fn pop(item: &str) -> Line {
        Line::Plain(format!("call dfort_pop({item})"))
    }
}

/// Writes reverse-sweep lines.
pub(super) fn emit(w: &mut Writer, lines: &[Line]) {
    for l in lines {
        match l {
            Line::Plain(s) => w.line(s),
            Line::Branch(arms) => {
                w.line("call dfort_pop(dfort_branch)");
                // An arm with nothing to run is left out (the branch
                // number that names it then selects no arm); with none
                // left, so is the IF.
                let mut kw = "if";
                for (i, arm) in arms.iter().enumerate() {
                    if !runs_something(arm) {
                        continue;
                    }
                    w.line(&format!("{kw} (dfort_branch == {}) then", i + 1));
                    w.indent();
                    emit(w, arm);
                    w.dedent();
                    kw = "else if";
                }
                if kw != "if" {
                    w.line("end if");
                }
            }
            Line::Retest {
                open,
                heads,
                arms,
                close,
            } => retest(w, open.as_deref(), heads, arms, close),
            Line::CountedLoop {
                k,
                var,
                start,
                end,
                step,
                save,
                var_alone,
                sums,
                body,
            } => {
                let head = direct_head(var, start, end, step, body).filter(|_| *var_alone);
                if let (true, Some(head)) = (sums.is_empty(), head) {
                    w.line(&head);
                    w.indent();
                    emit(w, body);
                    w.dedent();
                    w.line("end do");
                } else if sums.is_empty() {
                    w.line(&format!(
                        "do {k} = max(0, ({end} - ({start}) + ({step})) / ({step})) - 1, 0, -1"
                    ));
                    w.indent();
                    w.line(&format!("{var} = {start} + {k} * ({step})"));
                    emit(w, body);
                    w.dedent();
                    w.line("end do");
                } else {
                    partial_sums_loop(w, k, var, start, end, step, sums, body);
                }
                if *save {
                    w.line(&format!("call dfort_pop({var})"));
                }
            }
            Line::Binomial(c) => c.emit(w),
            Line::CountLoop {
                k,
                counter,
                count,
                then,
                body,
            } => {
                match count {
                    Some(c) => w.line(&format!("{counter} = {c}")),
                    None => w.line(&format!("call dfort_pop({counter})")),
                }
                for l in then {
                    w.line(l);
                }
                w.line(&format!("do {k} = 1, {counter}"));
                w.indent();
                emit(w, body);
                w.dedent();
                w.line("end do");
            }
        }
    }
}

/// A construct whose conditions the reverse sweep evaluates again
/// ([`Line::Retest`]). The arms with nothing to run are left out: the
/// cases of a SELECT CASE, the trailing arms of an IF (an earlier one
/// stays, empty, as the arms after it are tested only when its condition
/// fails); with none left, so is the construct.
fn retest(w: &mut Writer, open: Option<&str>, heads: &[String], arms: &[Vec<Line>], close: &str) {
    let select = open.is_some();
    let Some(last) = arms.iter().rposition(|a| runs_something(a)) else {
        return;
    };
    if let Some(open) = open {
        w.line(open);
    }
    for (head, arm) in heads.iter().zip(arms).take(last + 1) {
        if select && !runs_something(arm) {
            continue;
        }
        w.line(head);
        w.indent();
        emit(w, arm);
        w.dedent();
    }
    w.line(close);
}

/// The head of a counted loop of step 1 or -1 run backwards over its
/// own index, `do i = end, start, -1` (the same iterations: the last is
/// `end` itself), when nothing in the reversed body may write the index
/// (no call mentions it, no line assigns it): a DO index must not be
/// redefined inside its loop. `None` otherwise (the reversed loop then
/// counts with a variable of its own and sets the index from it).
fn direct_head(var: &str, start: &str, end: &str, step: &str, body: &[Line]) -> Option<String> {
    let by = match step.trim() {
        "1" => ", -1",
        "-1" | "(-1)" => "",
        _ => return None,
    };
    if may_write(var, body) {
        return None;
    }
    Some(format!("do {var} = {end}, {start}{by}"))
}

/// Whether `line` is `call dfort_pop(x)` restoring one variable other
/// than `var` (an element `x(i)` names `var` only in its subscripts,
/// evaluated before the call).
fn pops_other_than(line: &str, var: &str) -> bool {
    let Some(arg) = line
        .strip_prefix("call dfort_pop(")
        .and_then(|r| r.trim_end().strip_suffix(')'))
    else {
        return false;
    };
    let base: String = arg
        .chars()
        .take_while(|&c| crate::fortran::is_name_char(c))
        .collect();
    crate::fortran::top_level_items(arg).len() == 1 && !base.is_empty() && base != var
}

/// Whether reverse-sweep lines hold a statement (not only comments).
pub(super) fn runs_something(lines: &[Line]) -> bool {
    lines.iter().any(|l| match l {
        Line::Plain(s) => !crate::fortran::is_comment_line(s),
        Line::Retest { arms, .. } => arms.iter().any(|a| runs_something(a)),
        _ => true,
    })
}

/// Whether a line of `body` may write variable `var`: assigns it, or is
/// a call (a pop, a callee's adjoint) or an I/O statement that mentions it.
fn may_write(var: &str, body: &[Line]) -> bool {
    let mentions = |s: &str| mentions(s, var);
    body.iter().any(|l| match l {
        Line::Plain(s) if crate::fortran::is_comment_line(s) => false,
        Line::Plain(s) => {
            let t = s.trim_start();
            mentions(t)
                && !pops_other_than(t, var)
                && (t.starts_with("call ")
                    || t.starts_with("read")
                    || t.starts_with("where")
                    || !t.contains(" = ")
                    || assigned(t).is_none_or(|(name, _)| name == var))
        }
        Line::Branch(arms) | Line::Retest { arms, .. } => arms.iter().any(|a| may_write(var, a)),
        Line::CountedLoop {
            var: inner, body, ..
        } => inner == var || may_write(var, body),
        Line::CountLoop { then, body, .. } => {
            then.iter().any(|s| mentions(s)) || may_write(var, body)
        }
        // Checkpointed loops rerun the forward sweep: anything may be
        // written.
        Line::Binomial(_) => true,
    })
}

/// `name = name + e` as `(name, e)`; `name` may be an array element
/// (`xb(k, j)`).
fn accumulation(line: &str) -> Option<(&str, &str)> {
    let (lhs, rhs) = line.split_once(" = ")?;
    let e = rhs.strip_prefix(lhs)?.strip_prefix(" + ")?;
    let (name, subscripts) = match lhs.split_once('(') {
        Some((n, rest)) => (n, Some(rest)),
        None => (lhs, None),
    };
    let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && subscripts.is_none_or(|r| r.ends_with(')'));
    ident.then_some((lhs, e))
}

/// Whether `text` has `name` as a whole word.
pub(super) fn mentions(text: &str, name: &str) -> bool {
    crate::fortran::whole_name_at(text, name).next().is_some()
}

/// The variable an assignment line writes (lower case, without its
/// subscripts or components) and the whole line's value: `("xb", "…")`
/// of `xb(i) = xb(i) + …`; `None` for any other line.
pub(super) fn assigned(line: &str) -> Option<(&str, &str)> {
    let (lhs, value) = line.trim().split_once(" = ")?;
    let end = lhs
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(lhs.len());
    let (name, rest) = lhs.split_at(end);
    let starts_as_name = name.starts_with(|c: char| c.is_ascii_alphabetic());
    let whole = rest.is_empty() || rest.starts_with('(') || rest.starts_with('%');
    (starts_as_name && whole && name == name.to_ascii_lowercase()).then_some((name, value))
}

/// The adjoints a reversed loop's body (at most [`MAX_BODY`] lines, no
/// call, not reading the loop's counter `k`) only adds to: real(8) scalars,
/// or elements that name one memory location on every iteration
/// (`scalar` says which), every
/// line mentioning which is `s = s + e` with `e` free of `s`. Their sums
/// are sequential chains, one floating-point add after the other;
/// written as partial sums over every fourth iteration, added at the end,
/// the adds overlap (the sum is reassociated: its rounding may change,
/// not its value). The other lines run in the same order as before.
pub(super) fn accumulations(body: &[Line], k: &str, scalar: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    for l in body {
        match l {
            Line::Plain(s) if crate::fortran::is_comment_line(s) => {}
            Line::Plain(s) if !mentions(s, k) && !s.starts_with("call ") => lines.push(s.as_str()),
            _ => return Vec::new(),
        }
    }
    // Only tight loops gain: a longer body, or one with calls, has other
    // work to overlap the adds with.
    if lines.len() > MAX_BODY {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for l in &lines {
        let Some((s, _)) = accumulation(l) else {
            continue;
        };
        let only_adds = lines
            .iter()
            .filter(|x| mentions(x, s))
            .all(|x| accumulation(x).is_some_and(|(t, e)| t == s && !mentions(e, s)));
        if only_adds && scalar(s) && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// A replayed loop whose body adds into the adjoints `sums`: four
/// iterations per trip, then the rest, each adding into its own partial
/// sums `dfort_s<a>_<p>`, which are added to the adjoints at the end.
#[allow(clippy::too_many_arguments)]
fn partial_sums_loop(
    w: &mut Writer,
    k: &str,
    var: &str,
    start: &str,
    end: &str,
    step: &str,
    sums: &[String],
    body: &[Line],
) {
    let part = |a: usize, p: usize| format!("dfort_s{}_{}", a + 1, p + 1);
    for a in 0..sums.len() {
        for p in 0..PARTS {
            w.line(&format!("{} = 0.0d0", part(a, p)));
        }
    }
    let trips = format!("max(0, ({end} - ({start}) + ({step})) / ({step}))");
    let iteration = |w: &mut Writer, p: usize, at: String| {
        w.line(&format!("{var} = {start} + {at} * ({step})"));
        for l in body {
            let Line::Plain(text) = l else { continue };
            match accumulation(text).and_then(|(s, e)| Some((sums.iter().position(|x| x == s)?, e)))
            {
                Some((a, e)) => {
                    let t = part(a, p);
                    w.line(&format!("{t} = {t} + {e}"));
                }
                None => w.line(text),
            }
        }
    };
    w.line(&format!("do {k} = {trips} - 1, {}, -{PARTS}", PARTS - 1));
    w.indent();
    for p in 0..PARTS {
        let at = match p {
            0 => k.to_string(),
            _ => format!("({k} - {p})"),
        };
        iteration(w, p, at);
    }
    w.dedent();
    w.line("end do");
    w.line(&format!("do {k} = mod({trips}, {PARTS}) - 1, 0, -1"));
    w.indent();
    iteration(w, 0, k.to_string());
    w.dedent();
    w.line("end do");
    for (a, s) in sums.iter().enumerate() {
        w.line(&format!(
            "{s} = {s} + (({} + {}) + ({} + {}))",
            part(a, 0),
            part(a, 1),
            part(a, 2),
            part(a, 3)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(lines: &[Line]) -> String {
        let mut w = Writer::default();
        emit(&mut w, lines);
        w.finish()
    }

    #[test]
    fn branch_arms_with_nothing_to_run_are_left_out() {
        let plain = |s: &str| Line::Plain(s.to_string());
        let arms = vec![
            vec![],
            vec![plain("xb = xb + yb")],
            vec![plain("! f.f90:3: y = 1")],
            vec![plain("zb = 0.0d0")],
        ];
        assert_eq!(
            emitted(&[Line::Branch(arms)]),
            "call dfort_pop(dfort_branch)\nif (dfort_branch == 2) then\n  xb = xb + yb\nelse if (dfort_branch == 4) then\n  zb = 0.0d0\nend if\n"
        );
        // No arm runs anything: the branch is still popped.
        let empty = vec![vec![plain("! f.f90:5: x = 2")], vec![]];
        assert_eq!(
            emitted(&[Line::Branch(empty)]),
            "call dfort_pop(dfort_branch)\n"
        );
    }

    #[test]
    fn a_loop_whose_body_pops_only_other_variables_runs_its_index_backwards() {
        let plain = |s: &str| Line::Plain(s.to_string());
        let lp = |body: Vec<Line>, var_alone: bool| Line::CountedLoop {
            k: "dfort_k1".into(),
            var: "i".into(),
            start: "2".into(),
            end: "n - 1".into(),
            step: "1".into(),
            save: false,
            var_alone,
            sums: Vec::new(),
            body,
        };
        let body = || {
            vec![
                plain("call dfort_pop(eta(i))"),
                plain("xb(i) = xb(i) * eta(i)"),
            ]
        };
        assert_eq!(
            emitted(&[lp(body(), true)]),
            "do i = n - 1, 2, -1\n  call dfort_pop(eta(i))\n  xb(i) = xb(i) * eta(i)\nend do\n"
        );
        // An index sharing its memory with another variable, a pop of the
        // index itself, or a pop of more than one value: the counter.
        let counted = "do dfort_k1 = max(0, (n - 1 - (2) + (1)) / (1)) - 1, 0, -1\n  i = 2 + dfort_k1 * (1)\n";
        assert!(emitted(&[lp(body(), false)]).starts_with(counted));
        for pop in [
            "call dfort_pop(i)",
            "call dfort_pop_where(x(i:), m)",
            "call dfort_pop(a(i), i)",
        ] {
            assert!(
                emitted(&[lp(vec![plain(pop)], true)]).starts_with(counted),
                "{pop}"
            );
        }
    }
}
