//! Binomial checkpointing of time loops (issue 40, item 4): the adjoint of
//! a loop marked `!$ad binomial-ckp(s)` runs the schedule the binomial
//! formula predicts, holds a fraction of the tape, and gives the gradient
//! of the adjoint that records every step. Each adjoint is compiled with
//! gfortran and run by a driver that prints the runtime's counts
//! (`dfort_ckp_stats`, `dfort_stack_stats`) and the gradient; the
//! derivatives themselves are also checked by `dfort verify` through
//! tests/kernels.toml (`heat_ckp`, `ocean_main`).

use crate::support::{build_and_run_program, Scratch};
use dfort_analysis::binomial::recomputed_steps;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of a driver printed.
#[derive(Debug)]
struct Run {
    /// Steps run again without recording, and steps reversed.
    advanced: u64,
    reversed: u64,
    /// The tape's peak, in bytes.
    peak: u64,
    gradient: Vec<f64>,
}

/// A directory of its own for this test run (removed when it passes).
fn scratch(tag: &str) -> Scratch {
    Scratch::new(&format!("ckp-{tag}"))
}

fn skip() -> bool {
    std::env::var_os("DFORT_SKIP_GFORTRAN").is_some()
}

/// Generates the adjoint of `root` in `source` (written to `dir`), builds
/// it with `driver` and runs it.
fn run(dir: &Path, name: &str, source: &str, root: &str, driver: &str, include: &Path) -> Run {
    let src = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let out_dir = dir.join(format!("{root}_out"));
    let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
        .args(["adjoint", "--root", root, "--output-dir"])
        .arg(&out_dir)
        .arg("-I")
        .arg(include)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dfort adjoint: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stem = src.file_stem().unwrap().to_string_lossy().to_string();
    let drv = out_dir.join("driver.f90");
    std::fs::write(&drv, driver).unwrap();
    let exe = out_dir.join("run");
    let mut build = Command::new("gfortran");
    build
        .args(["-O1", "-fcheck=bounds", "-J"])
        .arg(&out_dir)
        .arg("-I")
        .arg(include)
        .arg(out_dir.join("dfort_stack.f90"))
        .arg(&src)
        .arg(out_dir.join(format!("{stem}_b.f90")))
        .arg(&drv)
        .arg("-o")
        .arg(&exe);
    let text = build_and_run_program(&mut build, &exe);
    let nums: Vec<f64> = text
        .split_whitespace()
        .map(|t| {
            t.parse()
                .unwrap_or_else(|_| panic!("not a number: {t} in {text}"))
        })
        .collect();
    Run {
        advanced: nums[0] as u64,
        reversed: nums[1] as u64,
        peak: nums[2] as u64,
        gradient: nums[3..].to_vec(),
    }
}

fn max_relative_difference(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(scale > 0.0, "the gradient is zero: nothing is checked");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / scale)
        .fold(0.0, f64::max)
}

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/model")
}

const MODEL_DRIVER: &str = "program driver
  use dfort_stack
  implicit none
  real(8) :: theta0(24), theta0b(24), fc, fcb
  integer(8) :: advanced, reversed, bytes, peak
  integer :: i
  theta0 = [(0.5d0 + 0.1d0*i, i = 1, 24)]
  theta0b = 0
  fcb = 1
  call ocean_main_b(theta0, theta0b, fc, fcb)
  call dfort_ckp_stats(advanced, reversed)
  call dfort_stack_stats(bytes, peak)
  print '(3i12)', advanced, reversed, peak
  print '(es25.17)', theta0b
end program driver
";

/// The shipped model with `steps` time steps and `snaps` snapshots (no
/// directive when `None`).
fn model(steps: u64, snaps: Option<u64>) -> String {
    let text = std::fs::read_to_string(model_dir().join("ocean_model.F")).unwrap();
    assert!(text.contains("nSteps=11") && text.contains("!$ad binomial-ckp(4)"));
    let text = text.replace("nSteps=11", &format!("nSteps={steps}"));
    match snaps {
        Some(s) => text.replace("!$ad binomial-ckp(4)", &format!("!$ad binomial-ckp({s})")),
        None => text.replace("!$ad binomial-ckp(4)\n", ""),
    }
}

/// 1,000 time steps of the model: with 20 snapshots the schedule runs the
/// steps the formula predicts again, the tape peaks at under 10% of the
/// tape of every step, and the gradient is the same to 1e-12.
#[test]
fn a_thousand_steps_with_twenty_snapshots_follow_the_binomial_formula() {
    if skip() {
        return;
    }
    let inc = model_dir();
    let plain = run(
        &scratch("model-plain"),
        "plain.F",
        &model(1000, None),
        "ocean_main",
        MODEL_DRIVER,
        &inc,
    );
    let ckp = run(
        &scratch("model-ckp"),
        "ckp.F",
        &model(1000, Some(20)),
        "ocean_main",
        MODEL_DRIVER,
        &inc,
    );
    assert_eq!(
        (plain.advanced, plain.reversed),
        (0, 0),
        "no schedule without the directive"
    );
    assert_eq!(ckp.reversed, 1000, "every step is reversed once");
    assert_eq!(ckp.advanced, recomputed_steps(1000, 20), "t(1000, 20)");
    assert_eq!(ckp.advanced, 2747);
    assert!(
        ckp.peak * 10 <= plain.peak,
        "checkpointed peak {} bytes against {} recording every step",
        ckp.peak,
        plain.peak
    );
    let d = max_relative_difference(&ckp.gradient, &plain.gradient);
    assert!(d <= 1e-12, "gradients differ by {d:e}");
}

/// The runtime's schedule (`dfort_ckp_next`), followed step by step by a
/// driver that keeps the state a real adjoint would: every advance starts
/// where the state is, every reversed step too, the steps are reversed
/// last to first, at most `s` snapshots are held, and the steps run again
/// are those of the binomial formula, for every `n ≤ 80` and `s ≤ 6`.
#[test]
fn the_runtime_schedule_is_the_binomial_one() {
    if skip() {
        return;
    }
    let dir = scratch("schedule");
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    let driver = "program schedule
  use dfort_stack
  implicit none
  integer, allocatable :: plan(:)
  integer :: n, s, act, from, to, state, next, held, most, bad
  integer :: snap(100)
  integer(8) :: advanced, reversed, a0, r0
  do s = 1, 6
    do n = 0, 80
      call dfort_ckp_stats(a0, r0)
      state = 0
      next = n - 1
      held = 1
      most = 1
      snap(1) = 0
      bad = 0
      call dfort_ckp_start(plan, n, s)
      do
        call dfort_ckp_next(plan, act, from, to)
        if (act == 0) exit
        select case (act)
        case (1)
          if (state /= from .or. to <= from) bad = bad + 1
          state = to
        case (2)
          held = held + 1
          most = max(most, held)
          snap(held) = state
        case (3)
          state = snap(held)
        case (4)
          held = held - 1
          state = -1
        case (5)
          if (state /= from .or. from /= next) bad = bad + 1
          next = next - 1
          state = -1
        case default
          bad = bad + 1
        end select
      end do
      if (next /= -1 .or. held /= 1 .or. allocated(plan)) bad = bad + 1
      call dfort_ckp_stats(advanced, reversed)
      print '(6i10)', n, s, advanced - a0, reversed - r0, most, bad
    end do
  end do
end program schedule
";
    std::fs::write(dir.join("schedule.f90"), driver).unwrap();
    let mut build = Command::new("gfortran");
    build
        .args(["-fcheck=all", "-J"])
        .arg(&*dir)
        .arg(dir.join("dfort_stack.f90"))
        .arg(dir.join("schedule.f90"))
        .arg("-o")
        .arg(dir.join("schedule"));
    let text = build_and_run_program(&mut build, &dir.join("schedule"));
    let mut rows = 0;
    for line in text.lines() {
        let v: Vec<u64> = line
            .split_whitespace()
            .map(|t| t.parse().unwrap())
            .collect();
        let [n, s, advanced, reversed, most, bad] = v[..] else {
            panic!("{line}");
        };
        assert_eq!(bad, 0, "n={n} s={s}: the schedule broke the state: {line}");
        assert_eq!(reversed, n, "n={n} s={s}");
        assert!(most <= s, "n={n} s={s}: {most} snapshots held");
        assert_eq!(advanced, recomputed_steps(n, s), "n={n} s={s}");
        rows += 1;
    }
    assert_eq!(rows, 6 * 81);
}

/// The tape itself: scalars and arrays of every rank the runtime takes
/// (contiguous, and sections with strides, which are copied in and out),
/// real(8), real(4) and integer(4), pushed past the first growths of the
/// storage (which moves it) and popped back in reverse: every value comes
/// back, and the tape ends empty. Built with bounds checks and under
/// AddressSanitizer, so that reading or writing outside the storage fails.
#[test]
fn the_tape_gives_back_every_value_it_was_given() {
    if skip() {
        return;
    }
    let dir = scratch("tape");
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    let driver = "program tape
  use dfort_stack
  implicit none
  real(8) :: a1(300000), b1(300000), a2(7, 9), b2(7, 9), a3(4, 5, 6), b3(4, 5, 6)
  real(8) :: a4(3, 4, 5, 6), b4(3, 4, 5, 6), a5(2, 3, 4, 5, 3), b5(2, 3, 4, 5, 3)
  real(8) :: s, t
  real(4) :: f3(5, 4, 3), g3(5, 4, 3)
  integer :: i3(6, 5, 2), j3(6, 5, 2), bad, k
  integer(8) :: depth, pushed, peak
  call random_number(a1); call random_number(a2); call random_number(a3)
  call random_number(a4); call random_number(a5); call random_number(f3)
  i3 = reshape([(k * 7 - 100, k = 1, size(i3))], shape(i3))
  s = 0.25d0
  b1 = -1; b2 = -1; b3 = -1; b4 = -1; b5 = -1; g3 = -1; j3 = -1; t = -1
  do k = 1, 3
    call dfort_push(a1)
  end do
  call dfort_push(s)
  call dfort_push(a2)
  call dfort_push(a2(1:7:2, 2:9:3))
  call dfort_push(a3)
  call dfort_push(a3(:, 1:5:2, :))
  call dfort_push(a4)
  call dfort_push(a5)
  call dfort_push(a5(:, :, 2:4, :, 1:3:2))
  call dfort_push(f3)
  call dfort_push(f3(1:5:2, :, 2:3))
  call dfort_push(i3)
  call dfort_push(i3(2:6:2, 1:5:2, :))
  call dfort_stack_depth(depth)
  bad = 0
  call dfort_pop(j3(2:6:2, 1:5:2, :)); if (any(j3(2:6:2, 1:5:2, :) /= i3(2:6:2, 1:5:2, :))) bad = bad + 1
  call dfort_pop(j3); if (any(j3 /= i3)) bad = bad + 1
  call dfort_pop(g3(1:5:2, :, 2:3)); if (any(g3(1:5:2, :, 2:3) /= f3(1:5:2, :, 2:3))) bad = bad + 1
  call dfort_pop(g3); if (any(g3 /= f3)) bad = bad + 1
  b5 = -1
  call dfort_pop(b5(:, :, 2:4, :, 1:3:2))
  if (any(b5(:, :, 2:4, :, 1:3:2) /= a5(:, :, 2:4, :, 1:3:2))) bad = bad + 1
  if (any(b5(:, :, 1, :, :) /= -1)) bad = bad + 1
  call dfort_pop(b5); if (any(b5 /= a5)) bad = bad + 1
  call dfort_pop(b4); if (any(b4 /= a4)) bad = bad + 1
  b3 = -1
  call dfort_pop(b3(:, 1:5:2, :)); if (any(b3(:, 1:5:2, :) /= a3(:, 1:5:2, :))) bad = bad + 1
  if (any(b3(:, 2, :) /= -1)) bad = bad + 1
  call dfort_pop(b3); if (any(b3 /= a3)) bad = bad + 1
  b2 = -1
  call dfort_pop(b2(1:7:2, 2:9:3)); if (any(b2(1:7:2, 2:9:3) /= a2(1:7:2, 2:9:3))) bad = bad + 1
  if (b2(2, 2) /= -1) bad = bad + 1
  call dfort_pop(b2); if (any(b2 /= a2)) bad = bad + 1
  call dfort_pop(t); if (t /= s) bad = bad + 1
  do k = 1, 3
    b1 = -1
    call dfort_pop(b1); if (any(b1 /= a1)) bad = bad + 1
  end do
  call dfort_stack_stats(pushed, peak)
  print '(4i12)', bad, depth, dfort_depth_now(), peak
contains
  integer(8) function dfort_depth_now()
    call dfort_stack_depth(dfort_depth_now)
  end function dfort_depth_now
end program tape
";
    std::fs::write(dir.join("tape.f90"), driver).unwrap();
    let mut build = Command::new("gfortran");
    build
        .args(["-fcheck=all", "-fsanitize=address", "-g", "-J"])
        .arg(&*dir)
        .arg(dir.join("dfort_stack.f90"))
        .arg(dir.join("tape.f90"))
        .arg("-o")
        .arg(dir.join("tape"));
    let text = build_and_run_program(&mut build, &dir.join("tape"));
    let check = |text: &str| {
        let v: Vec<i64> = text
            .split_whitespace()
            .map(|t| t.parse().unwrap())
            .collect();
        let [bad, depth, after, peak] = v[..] else {
            panic!("{text}");
        };
        assert_eq!(bad, 0, "values came back changed: {text}");
        // 3 × 300,000 + 1 + 63 + 12 + 120 + 72 + 360 + 360 + 180 + 60 + 24 + 60 + 18
        // entries, 8 bytes each.
        assert_eq!(depth, 901_330, "{text}");
        assert_eq!(peak, 8 * depth, "{text}");
        assert_eq!(after, 0, "{text}");
    };
    check(&text);
    // Again with at most 1 MB in memory: most of the tape goes to a file in
    // blocks and comes back, last first, as the pops reach it.
    let file = dir.join("spilled.bin");
    let ran = Command::new(dir.join("tape"))
        .env("DFORT_TAPE_MEMORY", "1")
        .env("DFORT_TAPE_FILE", &file)
        .output()
        .expect("run the program");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    check(&String::from_utf8_lossy(&ran.stdout));
    let written = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    assert!(written > 2_000_000, "the tape file holds {written} bytes");
}

/// The runtime's regions of real(8) arrays (what a checkpoint saves of the
/// part of an array a call touches), of ranks 1 to 3, with unit steps (one
/// block copy per contiguous row), other steps, reversed steps and ends
/// cut by the last element the callee reaches: each pop restores exactly
/// the elements its push saved, in the stack's order, and leaves the
/// others alone. Checked against the elements the region's definition
/// names, under AddressSanitizer and bounds checks.
#[test]
fn regions_give_back_the_elements_they_saved() {
    if skip() {
        return;
    }
    let dir = scratch("regions");
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    let driver = "program regions
  use dfort_stack
  implicit none
  integer, parameter :: n = 7 * 6 * 5
  real(8) :: a(n), b(n), want(n)
  integer :: bad, k, case
  integer(8) :: depth
  ! (f1, l1, s1, f2, l2, s2, f3, l3, s3, cap) for arrays 7 x 6 x 5.
  integer, parameter :: cases(10, 8) = reshape([ &
    2, 6, 1, 1, 6, 1, 3, 3, 1, 210, &
    1, 7, 1, 2, 5, 2, 1, 5, 1, 150, &
    3, 3, 1, 4, 4, 1, 2, 4, 1, 210, &
    1, 7, 2, 1, 6, 1, 1, 5, 2, 210, &
    6, 2, -1, 5, 1, -2, 4, 2, -1, 200, &
    1, 7, 1, 1, 6, 1, 1, 5, 1, 97, &
    4, 3, 1, 1, 6, 1, 1, 5, 1, 210, &
    2, 2, 0, 3, 6, 1, 5, 5, 0, 210], [10, 8])
  bad = 0
  do k = 1, n
    a(k) = k
  end do
  do case = 1, 8
    do k = 1, 3
      b = a
      call push(k, cases(:, case))
      want = -a
      call mark(k, cases(:, case), want, a)
      b = -a
      call pop(k, cases(:, case))
      if (any(b /= want)) bad = bad + 1
    end do
  end do
  call dfort_stack_depth(depth)
  print '(2i12)', bad, depth
contains
  subroutine push(rank, c)
    integer, intent(in) :: rank, c(10)
    select case (rank)
    case (1)
      call dfort_push_region_r8_1(b(1), c(1), c(2), c(3), c(10))
    case (2)
      call dfort_push_region_r8_2(b(1), 7, c(1), c(2), c(3), c(4), c(5), c(6), c(10))
    case (3)
      call dfort_push_region_r8_3(b(1), 7, 6, c(1), c(2), c(3), c(4), c(5), c(6), &
        c(7), c(8), c(9), c(10))
    end select
  end subroutine push
  subroutine pop(rank, c)
    integer, intent(in) :: rank, c(10)
    select case (rank)
    case (1)
      call dfort_pop_region_r8_1(b(1), c(1), c(2), c(3), c(10))
    case (2)
      call dfort_pop_region_r8_2(b(1), 7, c(1), c(2), c(3), c(4), c(5), c(6), c(10))
    case (3)
      call dfort_pop_region_r8_3(b(1), 7, 6, c(1), c(2), c(3), c(4), c(5), c(6), &
        c(7), c(8), c(9), c(10))
    end select
  end subroutine pop
  ! The elements the region names: first:last:step per dimension (a
  ! step of 0 is the first only), offsets 1 .. cap.
  subroutine mark(rank, c, w, v)
    integer, intent(in) :: rank, c(10)
    real(8), intent(inout) :: w(n)
    real(8), intent(in) :: v(n)
    integer :: i1, i2, i3, o, e(3), t(3)
    do o = 1, 3
      t(o) = c(3 * o)
      e(o) = c(3 * o - 1)
      if (t(o) == 0) then
        t(o) = 1
        e(o) = c(3 * o - 2)
      end if
    end do
    if (rank < 3) then
      e(3) = 1; t(3) = 1
    end if
    if (rank < 2) then
      e(2) = 1; t(2) = 1
    end if
    do i3 = merge(c(7), 1, rank == 3), e(3), t(3)
      do i2 = merge(c(4), 1, rank >= 2), e(2), t(2)
        do i1 = c(1), e(1), t(1)
          o = i1 + (i2 - 1) * 7 + (i3 - 1) * 42
          if (rank == 1) o = i1
          if (o >= 1 .and. o <= c(10)) w(o) = v(o)
        end do
      end do
    end do
  end subroutine mark
end program regions
";
    std::fs::write(dir.join("regions.f90"), driver).unwrap();
    let mut build = Command::new("gfortran");
    build
        .args(["-fcheck=all", "-fsanitize=address", "-g", "-J"])
        .arg(&*dir)
        .arg(dir.join("dfort_stack.f90"))
        .arg(dir.join("regions.f90"))
        .arg("-o")
        .arg(dir.join("regions"));
    let text = build_and_run_program(&mut build, &dir.join("regions"));
    let v: Vec<i64> = text
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(
        v,
        [0, 0],
        "regions restored wrongly (bad cases, tape left): {text}"
    );
}

/// The heat kernel checkpointed with one to three snapshots, over loops
/// of zero, one and several steps: the same gradient as recording every
/// step, and the schedule of the formula.
#[test]
fn checkpointed_gradients_equal_recorded_ones() {
    if skip() {
        return;
    }
    let kernel = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/kernels/time_loop_ckp.f90"),
    )
    .unwrap();
    let driver = |nt: u64| {
        format!(
            "program driver
  use dfort_stack
  implicit none
  real(8) :: u(12), ub(12), cost, costb
  integer(8) :: advanced, reversed, bytes, peak
  integer :: i
  u = [(0.3d0 + 0.05d0*i, i = 1, 12)]
  ub = 0
  costb = 1
  call heat_ckp_b(u, ub, 12, {nt}, cost, costb)
  call dfort_ckp_stats(advanced, reversed)
  call dfort_stack_stats(bytes, peak)
  print '(3i12)', advanced, reversed, peak
  print '(es25.17)', ub
end program driver
"
        )
    };
    let inc = model_dir();
    for nt in [0u64, 1, 9] {
        let plain_src = kernel.replace("!$ad binomial-ckp(3)\n", "");
        let dir = scratch(&format!("heat-{nt}"));
        let plain = run(&dir, "plain.f90", &plain_src, "heat_ckp", &driver(nt), &inc);
        for s in [1u64, 3] {
            let src = kernel.replace("binomial-ckp(3)", &format!("binomial-ckp({s})"));
            let dir = scratch(&format!("heat-{nt}-{s}"));
            let ckp = run(&dir, "ckp.f90", &src, "heat_ckp", &driver(nt), &inc);
            assert_eq!(ckp.reversed, nt, "nt={nt} s={s}");
            assert_eq!(ckp.advanced, recomputed_steps(nt, s), "nt={nt} s={s}");
            if nt > 0 {
                let d = max_relative_difference(&ckp.gradient, &plain.gradient);
                assert!(d <= 1e-12, "nt={nt} s={s}: gradients differ by {d:e}");
            }
        }
    }
}

/// A loop dfort cannot run again, or a directive that marks no counted
/// loop, is refused with its line and the rule's code; no file is written.
#[test]
fn loops_that_cannot_be_checkpointed_are_refused_with_the_line() {
    let cases = [
        (
            "subroutine r(x, n)\n  real(8) :: x(4)\n  integer :: n, it\n!$ad independent(x)\n!$ad dependent(x)\n!$ad binomial-ckp(2)\n  do it = 1, n\n    read (10, *) x(1)\n    x = x*x\n  end do\nend\n",
            "7:",
            "a READ",
        ),
        (
            "subroutine r(x, n)\n  real(8) :: x(4)\n  integer :: n, it\n!$ad independent(x)\n!$ad dependent(x)\n!$ad binomial-ckp(2)\n  x = x*2\n  do it = 1, n\n    x = x*x\n  end do\nend\n",
            "6:",
            "not a counted DO loop",
        ),
        (
            "subroutine r(x, n)\n  real(8) :: x(4)\n  integer :: n, it\n!$ad independent(x)\n!$ad dependent(x)\n!$ad binomial-ckp(0)\n  do it = 1, n\n    x = x*x\n  end do\nend\n",
            "6:",
            "from 1 to 10000",
        ),
    ];
    for (i, (text, line, why)) in cases.iter().enumerate() {
        let dir = scratch(&format!("refused-{i}"));
        let src = dir.join("r.f90");
        std::fs::write(&src, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
            .args(["adjoint", "--root", "r", "--output-dir"])
            .arg(dir.join("out"))
            .arg(&src)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("[binomial-checkpoint]"), "{err}");
        assert!(err.contains(&format!("r.f90:{line}")), "{err}");
        assert!(err.contains(why), "{err}");
        assert!(!dir.join("out").join("r_b.f90").exists());
    }
}
