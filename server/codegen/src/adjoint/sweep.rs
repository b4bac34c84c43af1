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

/// A reverse-sweep line or construct.
pub(super) enum Line {
    Plain(String),
    /// Pop the arm id and run that arm's reverse sweep.
    Branch(Vec<Vec<Line>>),
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
        body: Vec<Line>,
    },
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
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 { "if" } else { "else if" };
                    w.line(&format!("{kw} (dfort_branch == {}) then", i + 1));
                    w.indent();
                    emit(w, arm);
                    w.dedent();
                }
                w.line("end if");
            }
            Line::CountedLoop {
                k,
                var,
                start,
                end,
                step,
                save,
                body,
            } => {
                w.line(&format!(
                    "do {k} = max(0, ({end} - ({start}) + ({step})) / ({step})) - 1, 0, -1"
                ));
                w.indent();
                w.line(&format!("{var} = {start} + {k} * ({step})"));
                emit(w, body);
                w.dedent();
                w.line("end do");
                if *save {
                    w.line(&format!("call dfort_pop({var})"));
                }
            }
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
