//! May-alias classes: the variables of a unit that may name the same
//! memory because a pointer the analyses do not read as its target
//! ([`crate::pointers`]) may be associated with each of them. This is
//! the flow-insensitive may-alias information of paper 002 §4 (one
//! address set per class, the same for every use), used the way paper
//! 000 §5.1 treats aliased variables: as one variable.
//!
//! Contract: [`classes`] gives the classes of two or more variables of a
//! prepared unit: the root variable of each pointer assignment's pointer
//! side is joined with the root variable of its target, except for local
//! pointers whose every use [`crate::pointers::see_through`] read as its
//! target (nothing uses them any more), and the members of each
//! EQUIVALENCE set are joined. The analyses treat a class as one
//! variable: every set of variables they compute is [`close`]d (holding
//! one member, it holds all), so that a write to one member is a partial
//! write to all of them and a read of one reads all of them.

use dfort_ir::bitset::BitSet;
use dfort_ir::queries::{class_of, used_pointers};
use dfort_ir::*;

/// The classes of `unit` (each sorted, two or more members), in order of
/// their first member.
pub fn classes(unit: &Unit) -> Vec<Vec<SymbolId>> {
    let n = unit.symbols.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let used = used_pointers(unit);
    let mut joined = false;
    for st in &unit.stmts {
        let StmtKind::PointerAssign { pointer, target } = &st.kind else {
            continue;
        };
        let (Some(p), Some(t)) = (root(pointer), root(target)) else {
            continue;
        };
        let followed = matches!(pointer.kind, ExprKind::Var(_))
            && unit.symbol(p).storage == Storage::Local
            && !used.contains_id(p);
        if followed || p.index() >= n || t.index() >= n {
            continue;
        }
        let (a, b) = (find(&mut parent, p.index()), find(&mut parent, t.index()));
        if a != b {
            parent[a.max(b)] = a.min(b);
            joined = true;
        }
    }
    // EQUIVALENCE: storage association, the same memory for good.
    for set in &unit.equivalences {
        for pair in set.windows(2) {
            let (p, t) = (pair[0].index(), pair[1].index());
            if p >= n || t >= n {
                continue;
            }
            let (a, b) = (find(&mut parent, p), find(&mut parent, t));
            if a != b {
                parent[a.max(b)] = a.min(b);
                joined = true;
            }
        }
    }
    if !joined {
        return Vec::new();
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<SymbolId>> = Default::default();
    for i in 0..n {
        let r = find(&mut parent, i);
        groups.entry(r).or_default().push(SymbolId::new(i));
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}

/// Makes `set` hold every member of each class it holds a member of.
pub fn close(unit: &Unit, set: &mut BitSet) {
    for class in &unit.aliases {
        if class.iter().any(|s| set.contains_id(*s)) {
            for s in class {
                set.insert_id(*s);
            }
        }
    }
}

/// Whether `s` may share its memory with another variable of `unit`.
pub fn is_aliased(unit: &Unit, s: SymbolId) -> bool {
    class_of(unit, s).is_some()
}

/// The variable a data reference is rooted at (`p` of `p%next%x(i)`).
fn root(e: &Expr) -> Option<SymbolId> {
    dfort_ir::dp::target(e).map(|(s, _)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(src: &str) -> Unit {
        let program = crate::test_support::program(src);
        let unit = &program.units[UnitId::new(0)];
        crate::prepare::unit(unit).unwrap_or_else(|| (**unit).clone())
    }

    fn names(u: &Unit) -> Vec<Vec<String>> {
        u.aliases
            .iter()
            .map(|c| c.iter().map(|s| u.symbol(*s).name.clone()).collect())
            .collect()
    }

    #[test]
    fn pointers_read_as_their_targets_alias_nothing() {
        let u = prepared(
            "subroutine s(a, n, y)
  integer :: n
  real(8), target :: a(n)
  real(8) :: y
  real(8), pointer :: p(:)
  p => a(2:n)
  y = sum(p)
end subroutine
",
        );
        assert!(u.aliases.is_empty(), "{:?}", names(&u));
    }

    #[test]
    fn a_pointer_associated_on_several_paths_joins_its_targets() {
        let u = prepared(
            "subroutine s(a, b, c, y)
  real(8), target :: a(3), b(3)
  real(8) :: y, w(3)
  logical :: c
  real(8), pointer :: p(:)
  if (c) then
    p => a
  else
    p => b
  end if
  y = sum(p)
  w = 1
end subroutine
",
        );
        assert_eq!(names(&u), [["a", "b", "p"]]);
        let mut set = BitSet::default();
        set.insert_id(u.lookup("p").unwrap());
        close(&u, &mut set);
        let held: Vec<&str> = set
            .ids::<SymbolId>()
            .map(|s| u.symbol(s).name.as_str())
            .collect();
        assert_eq!(held, ["a", "b", "p"]);
        assert!(!is_aliased(&u, u.lookup("w").unwrap()));
    }

    #[test]
    fn swapped_time_levels_and_linked_nodes_are_one_class_each() {
        let u = prepared(
            "subroutine s(a, b, n, y)
  integer :: n, t
  real(8), target :: a(n), b(n)
  real(8) :: y
  real(8), pointer :: old(:), new(:), tmp(:)
  type cell
    real(8) :: x
  end type
  old => a
  new => b
  do t = 1, 3
    new = 2 * old
    tmp => old
    old => new
    new => tmp
  end do
  y = sum(old)
end subroutine
",
        );
        assert_eq!(names(&u), [["a", "b", "old", "new", "tmp"]]);
    }
}
