//! Where a READ cuts a derivative. Activity analysis (paper 000 §3) makes
//! what a READ defines not varied: dfort treats values read from files
//! as passive, so the derivatives are those of a program whose files are
//! inputs. A value that depends on the independents, written to a file or
//! an internal file and read back, then gets derivative 0 where it is
//! read. dfort keeps that treatment and says where it matters, so the
//! zero is never silent.
//!
//! Contract: [`of_root`] lists, for the derivative set of one root, each
//! READ of the set's units that defines a real or complex variable useful
//! after it (a dependent depends on the value read), with a WRITE of the
//! set that writes a varied value to a file the READ may read: the same
//! internal file (the same variable; a dummy argument may be any), or
//! external units that may be the same
//! ([`IoUnit::may_be_same_external`]: equal numbers, or a number known
//! only at run time) read and written in the same form (formatted or
//! unformatted: a connection has one). Which of the two runs first is not followed (a loop
//! may run the READ after the WRITE). One cut per READ and variable read,
//! naming the first such WRITE. Analysis only: `dfort adjoint`, `tangent`
//! and `verify` print the cuts as warnings, `dfort check --root` and the
//! editor show them (rule `cut-by-io`).

use crate::dep::{global_key, GlobalKey};
use crate::derivatives::RootSet;
use crate::interproc::ProgramActivity;
use dfort_ir::dp::{differentiable, io_targets};
use dfort_ir::*;

/// A READ that may read back a varied value a WRITE wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoCut {
    /// The READ statement and its unit.
    pub read: Span,
    pub unit: UnitId,
    /// The variable the READ defines whose derivative it cuts.
    pub variable: String,
    /// The WRITE statement.
    pub write: Span,
    /// The varied variable the WRITE's output reads.
    pub written: String,
}

/// The file a READ or WRITE transfers data with, for matching.
#[derive(Clone, Debug, PartialEq, Eq)]
enum File {
    /// An internal file: a local variable, a global, or a dummy argument
    /// (which may be any internal file of the caller).
    Local(UnitId, SymbolId),
    Global(GlobalKey),
    Dummy,
    /// An external unit, and whether the transfer is formatted.
    External(IoUnit, bool),
}

impl File {
    fn of(program: &Program, unit: &Unit, io: IoUnit, formatted: bool) -> Option<File> {
        match io {
            IoUnit::Default => None,
            IoUnit::Internal(s) => Some(match global_key(program, unit, s) {
                Some(k) => File::Global(k),
                None if matches!(unit.symbol(s).storage, Storage::Dummy(_)) => File::Dummy,
                None => File::Local(unit.id, s),
            }),
            external => Some(File::External(external, formatted)),
        }
    }

    fn may_be_same(&self, other: &File) -> bool {
        match (self, other) {
            (File::External(a, f), File::External(b, g)) => f == g && a.may_be_same_external(*b),
            (File::External(..), _) | (_, File::External(..)) => false,
            (File::Dummy, _) | (_, File::Dummy) => true,
            (a, b) => a == b,
        }
    }
}

/// A WRITE of a varied value.
struct Written {
    file: File,
    span: Span,
    name: String,
}

/// The cuts of the derivative set `set` (see the module's contract).
pub fn of_root(program: &Program, set: &RootSet, activity: &ProgramActivity) -> Vec<IoCut> {
    let transfers = |kind: IoKind| {
        set.units.iter().flat_map(move |&u| {
            let unit = program.unit(u);
            let act = activity.activity[u].as_deref();
            unit.stmts.iter().filter_map(move |st| match &st.kind {
                StmtKind::Io {
                    kind: k,
                    unit: io,
                    formatted,
                    reads,
                    writes,
                    ..
                } if *k == kind => {
                    let file = File::of(program, unit, *io, *formatted)?;
                    Some((unit, act?, st, file, reads, writes))
                }
                _ => None,
            })
        })
    };
    let written: Vec<Written> = transfers(IoKind::Write)
        .filter_map(|(unit, act, st, file, reads, _)| {
            let varied = act.varied_before.get(st.id)?;
            let mut found = None;
            for e in reads {
                e.walk(&mut |x| {
                    if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = &x.kind {
                        if found.is_none() && differentiable(unit, *v) && varied.contains_id(*v) {
                            found = Some(*v);
                        }
                    }
                });
            }
            Some(Written {
                file,
                span: st.span,
                name: unit.symbol(found?).name.clone(),
            })
        })
        .collect();
    if written.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (unit, act, st, file, _, writes) in transfers(IoKind::Read) {
        let Some(w) = written.iter().find(|w| w.file.may_be_same(&file)) else {
            continue;
        };
        let mut seen = Vec::new();
        // (An implied DO's variable is an integer.)
        for (v, _) in io_targets(writes) {
            let useful = differentiable(unit, v) && act.useful_after(st.id, v);
            if useful && !seen.contains(&v) {
                seen.push(v);
                out.push(IoCut {
                    read: st.span,
                    unit: unit.id,
                    variable: unit.symbol(v).name.clone(),
                    write: w.span,
                    written: w.name.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// Per cut of root `head` (x independent, y dependent): the line of
    /// the READ, the variable read, the line of the WRITE and the value
    /// written.
    fn cuts(src: &str) -> Vec<(usize, String, usize, String)> {
        let p = program(src);
        let head = p.units.iter().find(|u| u.name == "head").expect("head");
        let facts = crate::facts::analyse(&p, &request("head", &["x"], &["y"]), None);
        let line = |s: dfort_ir::Span| src[..s.range.start as usize].lines().count();
        facts
            .io_cuts(head.id)
            .into_iter()
            .map(|c| (line(c.read), c.variable, line(c.write), c.written))
            .collect()
    }

    const HEAD: &str = "subroutine head(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  character(len=40) :: buf, other
  real(8) :: t
  integer :: n, u
";

    fn with(body: &str) -> String {
        format!("{HEAD}{body}  y = t * t + x\nend subroutine head\n")
    }

    #[test]
    fn an_active_value_read_back_from_an_internal_file_is_a_cut() {
        let src = with("  write(buf, '(es25.17)') 2.0d0 * x\n  read(buf, *) t\n");
        assert_eq!(cuts(&src), [(9, "t".into(), 8, "x".into())]);
        // `unit=` names the internal file as well.
        let src = with("  write(unit=buf, fmt=*) x\n  read(unit=buf, fmt=*) n, t\n");
        assert_eq!(cuts(&src), [(9, "t".into(), 8, "x".into())]);
    }

    #[test]
    fn external_units_match_by_number_or_when_computed() {
        let src = with("  write(11, *) x\n  rewind(11)\n  read(11, *) t\n");
        assert_eq!(cuts(&src), [(10, "t".into(), 8, "x".into())]);
        // A unit number known only at run time may be any.
        let src = with("  u = 11\n  write(u, *) x\n  read(12, *) t\n");
        assert_eq!(cuts(&src), [(10, "t".into(), 9, "x".into())]);
        // Different literal numbers are different files; a formatted
        // WRITE is not read back by an unformatted READ.
        assert!(cuts(&with("  write(11, *) x\n  read(12, *) t\n")).is_empty());
        assert!(cuts(&with("  write(u, '(es25.17)') x\n  read(u) t\n")).is_empty());
        let src = with("  write(u) x\n  read(u, rec=1) t\n");
        assert_eq!(cuts(&src), [(9, "t".into(), 8, "x".into())]);
    }

    #[test]
    fn no_cut_without_a_varied_write_a_useful_read_or_a_common_file() {
        // The WRITE writes nothing varied.
        assert!(cuts(&with("  write(buf, *) 2.0d0\n  read(buf, *) t\n")).is_empty());
        // Another internal file; the terminal.
        assert!(cuts(&with("  write(other, *) x\n  read(buf, *) t\n")).is_empty());
        assert!(cuts(&with("  write(*, *) x\n  print *, x\n  read(*, *) t\n")).is_empty());
        // What the READ defines is an integer, or is not used after it.
        assert!(cuts(&with("  write(buf, *) x\n  read(buf, *) n\n  t = x\n")).is_empty());
        assert!(cuts(&with("  write(buf, *) x\n  read(buf, *) t\n  t = x\n")).is_empty());
    }

    #[test]
    fn a_dummy_internal_file_may_be_the_one_its_caller_wrote() {
        let src = "subroutine head(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  character(len=40) :: buf
  write(buf, *) x
  call parse(buf, y)
end subroutine head

subroutine parse(s, v)
  implicit none
  character(len=*), intent(in) :: s
  real(8), intent(out) :: v
  read(s, *) v
end subroutine parse
";
        assert_eq!(cuts(src), [(14, "v".into(), 6, "x".into())]);
    }
}
