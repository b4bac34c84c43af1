//! Roots whose independents take their values after one of their calls
//! (`--after`, issue 40: MITgcm's `the_main_loop` sets its state in
//! `initialise_varia`). A small model that sets its state in an
//! initialisation call, steps it in a checkpointed time loop and ends in
//! a cost accumulated over the steps: its adjoint and tangent with `--after init_state`, compiled
//! with gfortran, give the gradient that finite differences of the state
//! after that call give, and agree with each other (dot-product test).
//! `dfort verify`, whose driver perturbs on entry only, says it cannot
//! check such a root; an `after` naming no suitable call is refused.

use crate::support::{build_and_run_program, Scratch};
use std::path::Path;
use std::process::Command;

const MODEL: &str = "      subroutine model(fc)
      implicit none
      real*8 fc
      real*8 t(20)
      common /state/ t
      integer k
      call init_state
!$ad binomial-ckp(2)
      do k = 1, 6
        call step
      end do
      call cost(fc)
      end

      subroutine init_state
      implicit none
      real*8 t(20), acc
      common /state/ t
      common /cost_acc/ acc
      integer i
      do i = 1, 20
        t(i) = sin(0.3d0*i)
      end do
      acc = 0d0
      end

      subroutine step
      implicit none
      real*8 t(20), tn(20), acc
      common /state/ t
      common /cost_acc/ acc
      integer i
      acc = acc + t(10)**2
      do i = 2, 19
        tn(i) = t(i) + 0.1d0*(t(i-1) - 2d0*t(i) + t(i+1))
     &        + 0.05d0*t(i)**2
      end do
      do i = 2, 19
        t(i) = tn(i)
      end do
      end

      subroutine cost(fc)
      implicit none
      real*8 fc, t(20), acc
      common /state/ t
      common /cost_acc/ acc
      integer i
      fc = acc
      do i = 1, 20
        fc = fc + t(i)**2 + 0.1d0*t(i)**3
      end do
      end
";

/// Prints the adjoint gradient, the centred differences of the state
/// after `init_state`, the tangent along a direction and the adjoint's
/// dot product with it.
const DRIVER: &str = "program driver
  implicit none
  real(8) :: t(20), tb(20), td(20), fc, fcb, fcd, fp, fm, g(20), fd(20), dir(20), h
  common /state/ t
  common /state_b/ tb
  common /state_d/ td
  integer :: i
  tb = 0
  fcb = 1
  call model_b(fc, fcb)
  g = tb
  h = 1d-6
  do i = 1, 20
    call init_state
    t(i) = t(i) + h
    call rest(fp)
    call init_state
    t(i) = t(i) - h
    call rest(fm)
    fd(i) = (fp - fm) / (2*h)
  end do
  dir = [(cos(0.7d0*i), i = 1, 20)]
  ! Twice: what the first run leaves in the tangents must not count.
  td = dir
  call model_d(fc, fcd)
  td = dir
  call model_d(fc, fcd)
  print '(es25.17)', g
  print '(es25.17)', fd
  print '(es25.17)', fcd, sum(g*dir)
contains
  subroutine rest(f)
    real(8) :: f
    integer :: k
    do k = 1, 6
      call step
    end do
    call cost(f)
  end subroutine rest
end program driver
";

/// A directory of its own for this test run (removed when it passes).
fn scratch(tag: &str) -> Scratch {
    Scratch::new(&format!("after-{tag}"))
}

fn dfort(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Builds `out/run` from the runtime, `model.f`, `derivatives` and
/// `out/driver.f90` with gfortran, runs it and returns the numbers it
/// printed.
fn build_and_run(dir: &Path, derivatives: &[&str]) -> Vec<f64> {
    let mut build = Command::new("gfortran");
    build
        .current_dir(dir.join("out"))
        .args(["-O1", "-fcheck=bounds", "dfort_stack.f90", "../model.f"])
        .args(derivatives)
        .args(["driver.f90", "-o", "run"]);
    build_and_run_program(&mut build, &dir.join("out/run"))
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect()
}

/// The driver's first 20 numbers (the adjoint's gradient) equal the next
/// 20 (finite differences) to 1e-6 of the largest difference.
fn assert_gradient_is_the_differences(nums: &[f64]) {
    let (g, fd) = (&nums[..20], &nums[20..40]);
    let scale = fd.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(scale > 0.1, "the finite differences are {fd:?}");
    for (i, (a, f)) in g.iter().zip(fd).enumerate() {
        assert!(
            (a - f).abs() <= 1e-6 * scale,
            "element {}: adjoint {a:e}, finite differences {f:e}",
            i + 1
        );
    }
}

const ROLES: [&str; 4] = ["--independent", "t", "--dependent", "fc"];

#[test]
fn the_gradient_is_the_one_with_respect_to_the_state_after_the_call() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = scratch("gradient");
    std::fs::write(dir.join("model.f"), MODEL).unwrap();
    for mode in ["adjoint", "tangent"] {
        let mut args = vec![mode, "--root", "model", "--after", "init_state"];
        args.extend(ROLES);
        args.extend(["--output-dir", "out", "model.f"]);
        let (ok, err) = dfort(&dir, &args);
        assert!(ok, "dfort {mode}: {err}");
    }
    let adjoint = std::fs::read_to_string(dir.join("out/model_b.f90")).unwrap();
    let root = &adjoint[..adjoint.find("end subroutine model_b").unwrap()];
    // The statements up to the call run as the original's and are not
    // reversed: what they recorded is dropped.
    assert!(root.contains("call init_state()"), "{root}");
    assert!(!root.contains("call init_state_b"), "{root}");
    assert!(
        root.contains("call dfort_stack_cut(dfort_entry_depth)"),
        "{root}"
    );
    // The tangent keeps the tangents given on entry across the call (whose
    // tangent sets those of everything it writes).
    let tangent = std::fs::read_to_string(dir.join("out/model_d.f90")).unwrap();
    let troot = &tangent[..tangent.find("end subroutine model_d").unwrap()];
    let kept = troot.find("dfort_seed1 = td").expect(troot);
    let call = troot.find("call init_state_d()").expect(troot);
    let set = troot.find("td = dfort_seed1").expect(troot);
    assert!(kept < call && call < set, "{troot}");

    std::fs::write(dir.join("out/driver.f90"), DRIVER).unwrap();
    let nums = build_and_run(&dir, &["model_b.f90", "model_d.f90"]);
    assert_gradient_is_the_differences(&nums);
    let (fcd, dot) = (nums[40], nums[41]);
    assert!(
        (fcd - dot).abs() <= 1e-12 * fcd.abs().max(1.0),
        "tangent {fcd:e} against the adjoint's dot product {dot:e}"
    );
}

#[test]
fn an_after_that_names_no_call_made_once_is_refused() {
    let dir = scratch("refused");
    std::fs::write(dir.join("model.f"), MODEL).unwrap();
    for (after, why) in [
        ("nosuch", "does not call `nosuch`"),
        ("step", "inside a loop or a branch"),
    ] {
        let mut args = vec!["adjoint", "--root", "model", "--after", after];
        args.extend(ROLES);
        args.extend(["--output-dir", "out", "model.f"]);
        let (ok, err) = dfort(&dir, &args);
        assert!(!ok, "dfort adjoint --after {after} succeeded");
        assert!(err.contains(why), "{err}");
        assert!(!dir.join("out/model_b.f90").exists());
    }
    // Inside another call, a dummy argument of the root cannot be
    // followed as the independent.
    let dummy = "      subroutine model2(x, fc)
      implicit none
      real*8 x(3), fc
      call prep(x)
      fc = sum(x**2)
      end

      subroutine prep(x)
      implicit none
      real*8 x(3)
      call fill(x)
      x = x*2d0
      end

      subroutine fill(x)
      implicit none
      real*8 x(3)
      x = 1d0
      end
";
    std::fs::write(dir.join("dummy.f"), dummy).unwrap();
    let (ok, err) = dfort(
        &dir,
        &[
            "adjoint",
            "--root",
            "model2",
            "--after",
            "fill",
            "--independent",
            "x",
            "--dependent",
            "fc",
            "--output-dir",
            "out2",
            "dummy.f",
        ],
    );
    assert!(!ok, "dfort adjoint --after fill succeeded");
    assert!(err.contains("not a COMMON or module variable"), "{err}");
    assert!(!dir.join("out2/dummy_b.f90").exists());
    // Nor a global the calls on the way pass as an argument.
    let passed = "      subroutine model3(fc)
      implicit none
      real*8 fc, t(3)
      common /st3/ t
      call prep3(t)
      fc = sum(t**2)
      end

      subroutine prep3(y)
      implicit none
      real*8 y(3)
      call fill3(y)
      y = y*2d0
      end

      subroutine fill3(y)
      implicit none
      real*8 y(3)
      y = 1d0
      end
";
    std::fs::write(dir.join("passed.f"), passed).unwrap();
    let (ok, err) = dfort(
        &dir,
        &[
            "adjoint",
            "--root",
            "model3",
            "--after",
            "fill3",
            "--independent",
            "t",
            "--dependent",
            "fc",
            "--output-dir",
            "out3",
            "passed.f",
        ],
    );
    assert!(!ok, "dfort adjoint --after fill3 succeeded");
    assert!(
        err.contains("passes the independent `t` as an argument"),
        "{err}"
    );
    // Nor a root reversed by basic blocks (a RETURN inside nested loops),
    // refused by the analyses with the reason (the fuzzer's seed 4040,
    // case 439: the generator refused it, naming a READ it did not have).
    let blocks = "      subroutine model4(x, fc)
      implicit none
      real*8 x(3), fc
      integer i, k
      call init4(x)
      fc = 0
      do k = 1, 2
      do i = 1, 3
        fc = fc + x(i)**2
        if (fc .gt. 1d3) exit
      end do
      if (fc .gt. 1d2) return
      end do
      fc = fc*2
      end

      subroutine init4(x)
      implicit none
      real*8 x(3)
      x = 1d0
      end
";
    std::fs::write(dir.join("blocks.f"), blocks).unwrap();
    let (ok, err) = dfort(
        &dir,
        &[
            "adjoint",
            "--root",
            "model4",
            "--after",
            "init4",
            "--independent",
            "x",
            "--dependent",
            "fc",
            "--output-dir",
            "out4",
            "blocks.f",
        ],
    );
    assert!(!ok, "dfort adjoint --after init4 succeeded");
    assert!(
        err.contains("`model4`, whose jumps dfort cannot structure"),
        "{err}"
    );
    assert!(!dir.join("out4/blocks_b.f90").exists());
    let mut args = vec!["verify", "--root", "model", "--after", "init_state"];
    args.extend(ROLES);
    args.push("model.f");
    let (ok, err) = dfort(&dir, &args);
    assert!(!ok, "dfort verify succeeded");
    assert!(
        err.contains("take their values after the call to `init_state`"),
        "{err}"
    );
}

/// The model set up through a chain of calls: `setup` calls `init_state`
/// and then mixes the state, so that the state after `init_state` is the
/// independent (as MITgcm's control is mapped in `ctrl_init_variables`
/// inside `initialise_varia`, and convective adjustment follows).
const NESTED: &str = "      subroutine model(fc)
      implicit none
      real*8 fc
      real*8 t(20)
      common /state/ t
      integer k
      call setup
      do k = 1, 4
        call step
      end do
      call cost(fc)
      end

      subroutine setup
      implicit none
      call init_params
      call init_state
      call mix_state
      end

      subroutine init_params
      implicit none
      real*8 r
      common /params/ r
      r = 0.2d0
      end

      subroutine mix_state
      implicit none
      real*8 t(20), r
      common /state/ t
      common /params/ r
      integer i
      do i = 1, 19
        t(i) = t(i) + r*t(i+1)**2
      end do
      end
";

const NESTED_DRIVER: &str = "program driver
  implicit none
  real(8) :: t(20), tb(20), fc, fcb, fp, fm, g(20), fd(20), h
  common /state/ t
  common /state_b/ tb
  integer :: i
  tb = 0
  fcb = 1
  call model_b(fc, fcb)
  g = tb
  h = 1d-6
  do i = 1, 20
    call init_params
    call init_state
    t(i) = t(i) + h
    call rest(fp)
    call init_params
    call init_state
    t(i) = t(i) - h
    call rest(fm)
    fd(i) = (fp - fm) / (2*h)
  end do
  print '(es25.17)', g
  print '(es25.17)', fd
contains
  subroutine rest(f)
    real(8) :: f
    integer :: k
    call mix_state
    do k = 1, 4
      call step
    end do
    call cost(f)
  end subroutine rest
end program driver
";

/// The call after which the independents take their values is made
/// inside a call of the root: the adjoint reverses what follows it in
/// every unit on the way (here the mixing), and its gradient is that of
/// finite differences of the state after that call.
#[test]
fn the_call_may_be_made_inside_a_call_of_the_root() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = scratch("nested");
    // The step, the cost and the initialisation of the first model.
    let shared: String = MODEL
        .split("\n\n")
        .filter(|u| !u.contains("subroutine model("))
        .collect::<Vec<_>>()
        .join("\n\n");
    std::fs::write(dir.join("model.f"), format!("{NESTED}\n{shared}")).unwrap();
    let mut args = vec!["adjoint", "--root", "model", "--after", "init_state"];
    args.extend(ROLES);
    args.extend(["--output-dir", "out", "model.f"]);
    let (ok, err) = dfort(&dir, &args);
    assert!(ok, "dfort adjoint: {err}");
    let adjoint = std::fs::read_to_string(dir.join("out/model_b.f90")).unwrap();
    let setup = &adjoint[adjoint.find("subroutine setup_b").expect(&adjoint)..];
    let setup = &setup[..setup.find("end subroutine").unwrap()];
    assert!(setup.contains("call mix_state_b"), "{setup}");
    assert!(!setup.contains("call init_state_b"), "{setup}");
    // The tangent takes only a call of the root itself.
    let mut args = vec!["tangent", "--root", "model", "--after", "init_state"];
    args.extend(ROLES);
    args.extend(["--output-dir", "out", "model.f"]);
    let (ok, err) = dfort(&dir, &args);
    assert!(!ok && err.contains("a call the root makes itself"), "{err}");

    std::fs::write(dir.join("out/driver.f90"), NESTED_DRIVER).unwrap();
    let nums = build_and_run(&dir, &["model_b.f90"]);
    assert_gradient_is_the_differences(&nums);
}
