//! Lowering of I/O statements (READ, WRITE, PRINT, OPEN, CLOSE, INQUIRE,
//! REWIND, ...) and FORMAT statements: what each reads and defines, the
//! labels its ERR=, END= and EOR= specifiers jump to, and its text as one
//! free-form line, which the derivatives run as written.
//!
//! Contract: `reads` holds every expression the statement evaluates that
//! names a variable (output items, the unit, the format, the specifiers'
//! values); `writes` every variable it defines (input items, an internal
//! file written to, IOSTAT=, IOMSG=, SIZE=, NEWUNIT= and INQUIRE's
//! results). Literals are left out of both.

use super::decl::parse_label;
use super::{named_children, UnitLowerer};
use crate::ir::*;
use dfort_syntax::flat::FNode;

/// Specifiers whose variable the statement defines (INQUIRE defines all
/// but these inputs: [`INQUIRE_INPUTS`]).
const OUTPUT_SPECIFIERS: &[&str] = &["iostat", "iomsg", "size", "newunit"];
const INQUIRE_INPUTS: &[&str] = &["unit", "file", "id"];
/// Specifiers that jump to a label.
const BRANCH_SPECIFIERS: &[&str] = &["err", "end", "eor"];

impl<'f, 'a> UnitLowerer<'f, 'a> {
    /// An I/O statement `n` of kind `kind`.
    pub(crate) fn io(&mut self, n: FNode<'a>, kind: IoKind) -> StmtKind {
        let inquire = n.kind() == "inquire_statement";
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        let mut branches = Vec::new();
        let mut namelist = false;
        let mut unit = IoUnit::Default;
        let mut formatted = matches!(kind, IoKind::Print);
        let transfers = matches!(kind, IoKind::Read | IoKind::Write);
        let mut stack = named_children(n);
        stack.reverse();
        while let Some(c) = stack.pop() {
            match c.kind() {
                "input_item_list" => writes.extend(self.items(c)),
                "output_item_list" => reads.extend(self.items(c)),
                "unit_identifier" => {
                    for u in named_children(c) {
                        let e = self.expr(u);
                        self.transfer_unit(e, kind, &mut unit, &mut reads, &mut writes);
                    }
                }
                "format_identifier" => {
                    formatted = true;
                    for f in named_children(c) {
                        if self.namelist_io(f, kind, &mut reads, &mut writes) {
                            namelist = true;
                            continue;
                        }
                        if f.kind() != "statement_label_reference" {
                            reads.push(self.expr(f));
                        }
                    }
                }
                "keyword_argument" => {
                    let name = super::field(c, "name").map(|k| self.text(k).to_ascii_lowercase());
                    let Some(value) = super::field(c, "value") else {
                        continue;
                    };
                    let name = name.unwrap_or_default();
                    formatted |= name == "fmt" || name == "nml";
                    if name == "nml" && self.namelist_io(value, kind, &mut reads, &mut writes) {
                        namelist = true;
                        continue;
                    }
                    if BRANCH_SPECIFIERS.contains(&name.as_str()) {
                        if let Some(l) = parse_label(self.text(value)) {
                            branches.push(l);
                        }
                        continue;
                    }
                    let e = self.expr(value);
                    if name == "unit" && transfers {
                        self.transfer_unit(e, kind, &mut unit, &mut reads, &mut writes);
                        continue;
                    }
                    let defines = if inquire {
                        !INQUIRE_INPUTS.contains(&name.as_str())
                    } else {
                        OUTPUT_SPECIFIERS.contains(&name.as_str())
                    };
                    if defines {
                        writes.push(e);
                    } else {
                        reads.push(e);
                    }
                }
                // `(unit, fmt, ...)` of the file positioning statements.
                _ if !named_children(c).is_empty() && c.kind() != "string_literal" => {
                    let mut kids = named_children(c);
                    kids.reverse();
                    stack.extend(kids);
                }
                _ => {}
            }
        }
        reads.retain(names_a_variable);
        writes.retain(names_a_variable);
        StmtKind::Io {
            kind,
            unit: if transfers { unit } else { IoUnit::Default },
            formatted: formatted || matches!(unit, IoUnit::Internal(_)),
            reads,
            writes,
            text: one_line(self.text(n)),
            branches,
            namelist: namelist && matches!(kind, IoKind::Read),
        }
    }

    /// The unit `e` of a READ or WRITE (of kind `kind`): an internal file
    /// (a character variable: WRITE defines it, READ reads it), or an
    /// external unit, numbered by a literal or a named constant or
    /// computed; what it reads goes to `reads`.
    fn transfer_unit(
        &self,
        e: Expr,
        kind: IoKind,
        unit: &mut IoUnit,
        reads: &mut Vec<Expr>,
        writes: &mut Vec<Expr>,
    ) {
        let named = match &e.kind {
            ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => Some(*s),
            _ => None,
        };
        let character = named.filter(|s| self.unit.symbol(*s).ty.base == BaseType::Character);
        *unit = match (&e.kind, character) {
            (_, Some(s)) => IoUnit::Internal(s),
            (ExprKind::Int(n), _) => IoUnit::Number(*n),
            (ExprKind::Var(s), _) => match &self.unit.symbol(*s) {
                sym if sym.attrs.parameter => match sym.init.as_ref().map(|i| &i.kind) {
                    Some(ExprKind::Int(n)) => IoUnit::Number(*n),
                    _ => IoUnit::Computed,
                },
                _ => IoUnit::Computed,
            },
            _ => IoUnit::Computed,
        };
        if character.is_some() && matches!(kind, IoKind::Write) {
            writes.push(e);
        } else {
            reads.push(e);
        }
    }

    /// When `n` names one of the unit's NAMELIST groups (as `NML=` or as
    /// the format): a READ may define each member (one the record does not
    /// name keeps its value, so the READ counts as reading it too), any
    /// other statement reads them.
    fn namelist_io(
        &mut self,
        n: FNode<'a>,
        kind: IoKind,
        reads: &mut Vec<Expr>,
        writes: &mut Vec<Expr>,
    ) -> bool {
        if n.kind() != "identifier" {
            return false;
        }
        let name = self.lname(n);
        let Some(list) = self.unit.namelists.iter().find(|l| l.name == name) else {
            return false;
        };
        let span = self.span(n);
        let members = list.members.iter().map(|&m| Expr {
            kind: ExprKind::Var(m),
            span,
        });
        let members: Vec<Expr> = members.collect();
        if matches!(kind, IoKind::Read) {
            writes.extend(members.iter().cloned());
        }
        reads.extend(members);
        true
    }

    /// The items of an I/O list (comments between continuation lines
    /// are not items).
    fn items(&mut self, list: FNode<'a>) -> Vec<Expr> {
        named_children(list)
            .into_iter()
            .filter(|i| i.kind() != "comment")
            .map(|i| self.expr(i))
            .collect()
    }

    /// A FORMAT statement labelled `label`: kept for the derivatives.
    pub(crate) fn format(&mut self, n: FNode<'a>, label: u32) {
        self.unit.formats.push((label, one_line(self.text(n))));
    }
}

fn names_a_variable(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::Var(_)
                | ExprKind::ArrayRef { .. }
                | ExprKind::Apply { .. }
                | ExprKind::FunctionCall { .. }
        )
    });
    found
}

/// A statement's text (free form, possibly continued over lines, with
/// comments) as one line: comments dropped, continuation ampersands
/// removed, the pieces joined with a blank (without one inside a
/// character literal, which a continuation splits without adding one).
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for (i, raw) in text.lines().enumerate() {
        let mut line = raw.trim_end();
        if i > 0 {
            line = line.trim_start();
            line = line.strip_prefix('&').unwrap_or(line);
            // Outside a character literal, the pieces are separated by
            // one blank.
            if quote.is_none() {
                line = line.trim_start();
                out.push(' ');
            }
        }
        let mut piece = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some(q) if c == q => {
                    // A doubled quote stays inside the literal.
                    if chars.peek() == Some(&q) {
                        piece.push(c);
                        piece.push(chars.next().unwrap_or(q));
                        continue;
                    }
                    quote = None;
                }
                Some(_) => {}
                None if c == '!' => break,
                None if c == '\'' || c == '"' => quote = Some(c),
                None => {}
            }
            piece.push(c);
        }
        let piece = piece.trim_end();
        let continued = piece.ends_with('&');
        let piece = piece.strip_suffix('&').unwrap_or(piece);
        out.push_str(if quote.is_some() {
            piece
        } else {
            piece.trim_end()
        });
        if !continued {
            break;
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn continued_statements_become_one_line_without_comments() {
        assert_eq!(
            one_line("write(*, *) 'x = ', & ! first\n     &  x, y\n"),
            "write(*, *) 'x = ', x, y"
        );
        assert_eq!(one_line("print *, a,&\n b ! done\n"), "print *, a, b");
        assert_eq!(
            one_line("write(*, '(a)') 'it''s! a&\n     &b'\n"),
            "write(*, '(a)') 'it''s! ab'"
        );
        assert_eq!(one_line("read(11, *) a"), "read(11, *) a");
    }
}
