//! The arithmetic of Griewank's binomial checkpointing schedule (Revolve,
//! Griewank & Walther 2000), shared by the analysis that decides a
//! checkpointed loop (`dfort_analysis::binomial`), the runtime it
//! mirrors (`dfort_ckp_next` in `dfort_stack.f90`) and the tools that
//! check a run against it: `β(s, r)`, the repetition number, the steps
//! run again and where the next snapshot goes. Pure integer functions.

/// `β(s, r) = C(s + r, s)`: the most steps `s` snapshots reverse with
/// every step run at most `r` times again (saturating).
pub fn beta(s: u64, r: i64) -> u64 {
    if r < 0 {
        return 0;
    }
    let mut b: u128 = 1;
    for i in 1..=r as u128 {
        b = b * (u128::from(s) + i) / i;
        if b > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    b as u64
}

/// The least `r` with `n ≤ β(s, r)`.
pub fn repetitions(n: u64, s: u64) -> i64 {
    let mut r = 0;
    while beta(s, r) < n {
        r += 1;
    }
    r
}

/// The steps a binomial schedule with `s ≥ 1` snapshots runs again to
/// reverse `n` steps (not counting the forward sweep's run, nor the
/// recorded run of each step): `t(n, s) = r·n − β(s+1, r−1)`.
pub fn recomputed_steps(n: u64, s: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let s = s.max(1);
    let r = repetitions(n, s);
    (r as u64)
        .saturating_mul(n)
        .saturating_sub(beta(s + 1, r - 1))
}

/// Where the optimal schedule takes its next snapshot when reversing `n ≥
/// 2` steps with `s ≥ 2` snapshots: after `j` steps, the largest of
/// `n − β(s−1, r)` and `β(s, r−2)` (at least 1), so that the last
/// `n − j` steps are reversed with `s − 1` snapshots and `r` repetitions,
/// and the first `j` with `s` snapshots and `r − 1`.
pub fn split(n: u64, s: u64) -> u64 {
    let r = repetitions(n, s);
    1.max(n.saturating_sub(beta(s - 1, r)))
        .max(beta(s, r - 2))
        .min(n - 1)
}
