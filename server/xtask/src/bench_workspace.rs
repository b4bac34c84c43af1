//! The generated workspace `cargo xtask bench-lsp --files N` opens: `N`
//! files of about `lines / N` lines each, three free-form modules for
//! every fixed-form file, tied together as a model's sources are — each
//! module USEs a lower module (only some of its names) and calls its
//! procedures, each fixed-form routine shares a COMMON block with
//! routines of other files and calls a lower fixed-form routine, and the
//! modules call fixed-form routines. "Lower" is the parent in a tree of
//! fan-in [`FAN_IN`] over the files of each form, as a model's drivers
//! call its packages and they its utilities: calls nest about five deep
//! in 2,500 files, and the call graph has no cycle.

use std::fmt::Write;
use std::path::PathBuf;

/// Whether file `k` is fixed form (one file in four).
fn is_fixed(k: usize) -> bool {
    k % 4 == 3
}

/// How many files of a form call (and use) the same lower file.
const FAN_IN: usize = 8;

/// The lower file of `k`'s form that `k` calls, if any: the parent of
/// `k`'s place among the files of that form in the tree of fan-in
/// [`FAN_IN`].
fn lower(k: usize) -> Option<usize> {
    let fixed = is_fixed(k);
    let same: Vec<usize> = (0..=k).filter(|&j| is_fixed(j) == fixed).collect();
    let place = same.len() - 1;
    (place > 0).then(|| same[(place - 1) / FAN_IN])
}

/// The fixed-form file a module calls: the parent of the fixed file
/// nearest below it.
fn fixed_callee(k: usize) -> Option<usize> {
    let near = (0..k).rev().find(|&j| is_fixed(j))?;
    Some(lower(near).unwrap_or(near))
}

/// COMMON blocks are shared by fixed-form files in groups of this many.
const COMMON_GROUPS: usize = 50;

/// The workspace: `files` files of about `total_lines` lines in all, with
/// their names relative to the workspace folder.
pub fn workspace(files: usize, total_lines: usize) -> Vec<(PathBuf, String)> {
    let per_file = (total_lines / files.max(1)).max(60);
    (0..files)
        .map(|k| {
            if is_fixed(k) {
                (
                    PathBuf::from(format!("src/f{k}.f")),
                    fixed_file(k, per_file),
                )
            } else {
                (
                    PathBuf::from(format!("src/w{k}.f90")),
                    module_file(k, per_file),
                )
            }
        })
        .collect()
}

/// A free-form module of about `lines` lines.
fn module_file(k: usize, lines: usize) -> String {
    let lower = lower(k);
    let old = fixed_callee(k);
    let mut s = String::new();
    let _ = writeln!(s, "module w{k}_mod");
    if let Some(j) = lower {
        let _ = writeln!(s, "  use w{j}_mod, only: w{j}_s0, w{j}_level");
    }
    let _ = writeln!(
        s,
        "  implicit none\n  integer, parameter :: dp = kind(1.d0)\n  real(dp) :: w{k}_level(100)\n  real(dp) :: w{k}_scale = 1.0_dp\ncontains"
    );
    let mut p = 0;
    let mut count = s.lines().count();
    while count + 48 < lines || p == 0 {
        let mut body = String::new();
        let _ = write!(
            body,
            "  !---------------------------------------------------------------
  ! w{k}_s{p}: one relaxation sweep of the generated model.
  !   n  number of points, x  state (in), y  tendency (inout),
  !   f  diagnostic norm (inout)
  !---------------------------------------------------------------
  subroutine w{k}_s{p}(n, x, y, f)
    integer, intent(in) :: n
    real(dp), intent(in) :: x(n)
    real(dp), intent(inout) :: y(n)
    real(dp), intent(inout) :: f
    integer :: i, j
    real(dp) :: t, h
    h = 1.0_dp / real(n + 1, dp)
{loops}",
            loops = crate::bench::sweep_loops(&format!(" * w{k}_scale"))
        );
        if let Some(j) = lower {
            let _ = writeln!(
                body,
                "    y(1) = y(1) + w{j}_level(1)\n    call w{j}_s0(n, x, y, f)"
            );
        }
        if let Some(j) = old {
            let _ = writeln!(body, "    call f{j}x0(n, x, y, f)");
        }
        let _ = writeln!(body, "    w{k}_level(1) = f\n  end subroutine w{k}_s{p}\n");
        count += body.lines().count();
        s.push_str(&body);
        p += 1;
    }
    let _ = writeln!(s, "end module w{k}_mod");
    s
}

/// A fixed-form file of Fortran 77 routines of about `lines` lines.
fn fixed_file(k: usize, lines: usize) -> String {
    let old = lower(k);
    let block = k % COMMON_GROUPS;
    let mut s = String::new();
    let mut p = 0;
    while s.lines().count() + 34 < lines || p == 0 {
        let _ = write!(
            s,
            "C-----------------------------------------------------------------------
C     F{k}X{p}: generated legacy kernel {k}.{p}.
C     N  number of points,  X  state,  F  residual,  W  weight
C-----------------------------------------------------------------------
      SUBROUTINE F{k}X{p}(N, X, F, W)
      INTEGER N, I, J
      DOUBLE PRECISION X(N), F(N), W, H, T, G(10)
      COMMON /PAR{block}/ T, G
      H = 1.0D0/DBLE(N+1)
C
C     Residual of the discretised equation at interior points.
      DO 10 I = 2, N-1
         F(I) = (2.0D0*X(I) - X(I-1) - X(I+1))/(H*H)
     &          - W*EXP(X(I)) + G(1)*T
   10 CONTINUE
C     Lower-triangular coupling.
      DO 30 J = 1, N
         DO 30 I = 1, J
            F(I) = F(I) + 1.0D-3*X(J)
   30 CONTINUE
      IF (N .LT. 3) GOTO 50
      F(1) = X(1)
      IF (F(1)) 40, 50, 40
   40 F(N) = X(N)
   50 CONTINUE
      T = F(1)
"
        );
        if let Some(j) = old {
            let _ = writeln!(s, "      CALL F{j}X0(N, X, F, W)");
        }
        let _ = write!(s, "      RETURN\n      END\n\n");
        p += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_has_the_size_and_ties_asked_for() {
        let files = workspace(40, 16_000);
        assert_eq!(files.len(), 40);
        let lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
        assert!((14_000..=18_000).contains(&lines), "{lines} lines");
        let fixed = files.iter().filter(|(p, _)| p.extension().unwrap() == "f");
        assert_eq!(fixed.count(), 10);
        // Modules: files 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, … File 12 is the
        // 10th module, whose parent is the 2nd (file 1); it calls the
        // fixed file above file 11, the nearest fixed file below it.
        let w12 = &files[12].1;
        assert!(w12.contains("use w1_mod, only: w1_s0, w1_level"), "{w12}");
        assert!(w12.contains("call w1_s0(n, x, y, f)") && w12.contains("call f3x0("));
        assert!(!files[0].1.contains("use "), "the root module uses none");
        // Fixed files: 3, 7, 11, … File 39 is the 10th; its parent is
        // the 2nd (file 7). It shares COMMON /PAR39/.
        let f39 = &files[39].1;
        assert!(f39.contains("COMMON /PAR39/ T, G") && f39.contains("CALL F7X0("));
        assert!(
            !files[3].1.contains("CALL F"),
            "the root fixed file calls none"
        );
        assert!(f39.lines().all(|l| l.len() <= 72), "a line past column 72");
    }
}
