//! Snapshot items a later call restores (paper 000 §5, joint mode: the
//! reverse sweep runs the callees' adjoints in the reverse order of the
//! calls, each after popping its own snapshot).
//!
//! When a call `d` follows a call `c` in the same statement list, the
//! reverse sweep pops `d`'s snapshot and runs `d`'s adjoint before it
//! reaches `c`'s adjoint. A value `c`'s snapshot would restore is then
//! already there when nothing from `c` on up to `d` (`c` included, `d`
//! too, whose adjoint runs `d` again) writes it and `d`'s snapshot
//! restores it — the whole variable, or the same reference with the same
//! subscripts and region bounds, whose variables nothing in between
//! writes either. Such an item is left out of `c`'s snapshot; an item
//! left out of `d`'s for the same reason by a call after `d` covers `c`
//! as well. A MITgcm time step reads `theta` in four calls before the
//! one that writes it: its snapshot is taken once, not four times.
//!
//! Contract: [`drop_restored_later`] removes, from the checkpoints of a
//! unit's CALL statements, the snapshot items (not the records, not the
//! module variables the generator brings in) whose value a later call's
//! snapshot restores as above. Only calls of one statement list of a
//! structured unit are paired, with nothing between them that can leave
//! the list (GO TO, EXIT, CYCLE, RETURN, STOP, or a statement lowered as
//! unsupported, such as a call with alternate returns), so that `d` runs
//! whenever `c` does and its adjoint runs before `c`'s. Split-mode calls
//! and calls without a derivative routine have no
//! snapshot and restore nothing. Analysis only.

use crate::checkpoint::{Caller, Saved, Why};
use crate::effects::{stmt_effects, LocalEffects};
use dfort_ir::bitset::BitSet;
use dfort_ir::*;

/// A value a later call's snapshot restores at that call.
#[derive(Clone)]
struct Restore {
    variable: SymbolId,
    /// The whole variable, else the item's reference with its region.
    whole: bool,
    text: String,
    /// What the reference's subscripts and the region's bounds read.
    reads: BitSet,
}

/// Removes from the snapshots of `checkpoints` (the CALL statements of
/// `caller.unit`) what a later call's snapshot restores (see the module's
/// contract).
pub fn drop_restored_later(caller: &Caller, checkpoints: &mut crate::checkpoint::CallCheckpoints) {
    if checkpoints.len() < 2 || !caller.unit.cfg.structured {
        return;
    }
    in_list(caller, &caller.unit.body, Vec::new(), checkpoints);
}

/// The statements `ids` of one list, last first, given what is restored
/// just after the list (`restored`).
fn in_list(
    caller: &Caller,
    ids: &[StmtId],
    mut restored: Vec<Restore>,
    checkpoints: &mut crate::checkpoint::CallCheckpoints,
) {
    let unit = caller.unit;
    for &id in ids.iter().rev() {
        let Some(st) = unit.stmts.get(id) else {
            restored.clear();
            continue;
        };
        let (writes, leaves) = nested_effects(caller, st);
        if leaves {
            restored.clear();
        }
        // What is restored after an IF or a loop is restored after each
        // of its arms and iterations when nothing in it changes it.
        let kept = |r: &Restore| !writes.contains_id(r.variable) && !r.reads.intersects(&writes);
        let blocks = st.kind.blocks();
        if !blocks.is_empty() {
            let inside: Vec<Restore> = restored.iter().filter(|r| kept(r)).cloned().collect();
            for b in blocks {
                in_list(caller, b, inside.clone(), checkpoints);
            }
        }
        if let Some(cp) = checkpoints.get_mut(&id) {
            if cp.callee_routine && !cp.split {
                cp.snapshot.retain(|item| {
                    !(droppable(item) && !writes.contains_id(item.variable) && {
                        let r = restore_of(unit, item);
                        restored.iter().any(|later| covers(later, &r))
                    })
                });
            }
        }
        restored.retain(|r| kept(r));
        if let Some(cp) = checkpoints.get(&id) {
            if cp.callee_routine && !cp.split {
                for item in cp.snapshot.iter().filter(|i| droppable(i)) {
                    let r = restore_of(unit, item);
                    if kept(&r) {
                        restored.push(r);
                    }
                }
            }
        }
    }
}

/// Items that only restore a value the callee's adjoint reads (not what
/// the call overwrites of what the caller needs).
fn droppable(item: &Saved) -> bool {
    matches!(item.why, Why::Snapshot | Why::Index)
}

fn restore_of(unit: &Unit, item: &Saved) -> Restore {
    let mut reads = BitSet::default();
    item.index_vars(unit, &mut reads);
    let whole = item.whole && item.region.is_none();
    let cap = item
        .region
        .as_ref()
        .map(|r| dfort_ir::dump::expr(unit, &r.cap))
        .unwrap_or_default();
    Restore {
        variable: item.variable,
        whole,
        text: format!("{} {cap}", item.text(unit)),
        reads,
    }
}

/// Whether restoring `later` restores at least what `earlier` would.
fn covers(later: &Restore, earlier: &Restore) -> bool {
    later.variable == earlier.variable && (later.whole || later.text == earlier.text)
}

/// What `st` and the statements nested in it may write, and whether
/// control can leave the statement list from inside it.
fn nested_effects(caller: &Caller, st: &Stmt) -> (BitSet, bool) {
    let mut fx = LocalEffects::default();
    let mut leaves = false;
    let mut stack = vec![st];
    while let Some(s) = stack.pop() {
        stmt_effects(caller.program, caller.unit, s, caller.effects, &mut fx);
        leaves |=
            s.kind.is_jump() || matches!(s.kind, StmtKind::Stop | StmtKind::Unsupported { .. });
        for b in s.kind.blocks() {
            stack.extend(b.iter().filter_map(|&i| caller.unit.stmts.get(i)));
        }
    }
    (fx.writes, leaves)
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// `acc` and `sq` read `u` nonlinearly (their adjoints need it),
    /// `bump` writes it; `u(2) = …` and the RETURN are in between. (The
    /// callees' local arrays keep their calls in joint mode,
    /// [`crate::split`].)
    const SRC: &str = "subroutine top(x, u, y, flag)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(inout) :: u(3)
  real(8), intent(out) :: y
  logical, intent(in) :: flag
  y = 0
  call acc(y, u, x)
  call acc(y, u, x)
  call sq(y, u)
  call acc(y, u, x)
  u(2) = x*x
  call acc(y, u, x)
  call bump(u, x)
  call acc(y, u, x)
  if (flag) return
  call acc(y, u, x)
  u(1) = u(1)*x
end subroutine top

subroutine acc(y, u, x)
  implicit none
  real(8), intent(inout) :: y
  real(8), intent(in) :: u(3), x
  real(8) :: w(1)
  y = y + u(1)*u(2)*x
end subroutine acc

subroutine sq(y, u)
  implicit none
  real(8), intent(inout) :: y
  real(8), intent(in) :: u(3)
  real(8) :: w(1)
  y = y + u(3)*u(3)
end subroutine sq

subroutine bump(u, x)
  implicit none
  real(8), intent(inout) :: u(3)
  real(8), intent(in) :: x
  real(8) :: w(1)
  u(3) = u(3) + x*u(1)
end subroutine bump
";

    /// Per CALL of `top`, by line: the snapshot's references.
    fn snapshots(src: &str) -> Vec<(usize, Vec<String>)> {
        let p = program(src);
        let top = p.units.iter().find(|u| u.name == "top").expect("top");
        let request = request("top", &["x", "u"], &["y", "u"]);
        let facts = crate::facts::analyse(&p, &request, None);
        let calls = &facts.decisions_of(top.id).expect("decisions").calls;
        calls
            .iter()
            .map(|(id, cp)| {
                let start = top.stmt(*id).span.range.start as usize;
                let line = src[..start].lines().count();
                let saved = cp.snapshot.iter().map(|s| s.text(top)).collect();
                (line, saved)
            })
            .collect()
    }

    /// The lines of the calls whose snapshot saves a part of `u`.
    fn saving_u(src: &str) -> Vec<usize> {
        snapshots(src)
            .into_iter()
            .filter(|(_, s)| s.iter().any(|t| t.starts_with('u')))
            .map(|(line, _)| line)
            .collect()
    }

    #[test]
    fn a_value_a_later_call_restores_is_left_out_of_an_earlier_snapshot() {
        // Lines 8 and 9: line 11 restores the same `u(1)[1:2]` (`sq`, on
        // line 10, writes nothing). 10: `sq`'s `u(1)[3:3]` is restored
        // by nobody after it. 11, 13: `u(2) = …` and `bump` write `u`
        // before the next call. 14: `bump` writes `u` itself. 15: the
        // RETURN may skip the call after it. 17: `u(1) = …` follows.
        assert_eq!(saving_u(SRC), [10, 11, 13, 14, 15, 17]);
    }

    #[test]
    fn an_element_is_restored_later_only_with_the_same_subscript_values() {
        let src = "subroutine top(x, u, y, k)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(inout) :: u(3)
  real(8), intent(out) :: y
  integer, intent(inout) :: k
  y = x
  call el(y, u(k))
  call el(y, u(k))
  k = k + 1
  call el(y, u(k))
  u(k) = x*u(k)
end subroutine top

subroutine el(y, v)
  implicit none
  real(8), intent(inout) :: y
  real(8), intent(in) :: v
  real(8) :: w(1)
  y = y + v*v
end subroutine el
";
        // Line 8: line 9 restores `u(k)` with the same `k`. 9: `k`
        // changes before line 11. 11: `u(k) = …` follows.
        assert_eq!(saving_u(src), [9, 11]);
    }

    #[test]
    fn a_call_in_an_arm_or_a_loop_is_restored_by_a_call_after_the_construct() {
        let src = "subroutine top(x, u, y, flag)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(inout) :: u(3)
  real(8), intent(out) :: y
  logical, intent(in) :: flag
  integer :: i
  y = 0
  if (flag) then
    call acc(y, u, x)
  else
    call acc(y, u, x)
    u(3) = x
  end if
  do i = 1, 2
    call acc(y, u, x)
    u(2) = u(2)*x
  end do
  do i = 1, 2
    call acc(y, u, x)
  end do
  call acc(y, u, x)
  u(1) = u(1)*x
end subroutine top

subroutine acc(y, u, x)
  implicit none
  real(8), intent(inout) :: y
  real(8), intent(in) :: u(3), x
  real(8) :: w(1)
  y = y + u(1)*u(2)*x
end subroutine acc
";
        // Lines 10, 12: the IF writes `u(3)`, so nothing restores `u`
        // for its arms. 16: its loop writes `u`. 20: line 22 restores it
        // after the loop, which does not write it. 22: `u(1) = …`
        // follows.
        assert_eq!(saving_u(src), [10, 12, 16, 22]);
    }
}
