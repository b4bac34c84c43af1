//! The adjoints of paper 003's examples (Hascoët, Utke, Naumann, "Cheaper
//! adjoints by reversing address computations"), in meaning: which
//! address values the forward sweep pushes, and which inversions and
//! recomputations the reverse sweep runs, in order. The full text is a
//! snapshot (regenerate with `INSTA_UPDATE=always cargo test --test e2e
//! address_recovery`); the numbers of every one of these adjoints are
//! checked by `derivatives.rs` (tests/kernels.toml).

use crate::support::*;
use dfort_codegen::adjoint::Recording;

/// The adjoint of `root` in fixture `file`.
fn adjoint(file: &str, root: &str, recording: Recording) -> String {
    adjoint_of(file, root, None, recording)
}

/// The adjoint of `root` with the given (independents, dependents), or
/// those of its directives and intents.
fn adjoint_of(
    file: &str,
    root: &str,
    roles_named: Option<(&[String], &[String])>,
    recording: Recording,
) -> String {
    let ws = fixture(file);
    let (facts, root) = root_request(&ws.program, root, roles_named, recording);
    dfort_codegen::adjoint::adjoint_of(&facts, root, "adjoint")
        .map(|(text, _)| text)
        .unwrap_or_else(|e| panic!("adjoint refused: {e:?}"))
}

/// The trimmed lines of the routine `name` between `from` and `to`.
fn section<'a>(text: &'a str, name: &str, from: &str, to: &str) -> Vec<&'a str> {
    let start = text
        .find(&format!("subroutine {name}("))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"));
    let body = &text[start..];
    let body = &body[..body
        .find(&format!("end subroutine {name}"))
        .unwrap_or(body.len())];
    let body = &body[body.find(from).map_or(0, |i| i + from.len())..];
    let body = &body[..body.find(to).unwrap_or(body.len())];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

fn forward<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    section(text, name, "! forward sweep", "! reverse sweep")
}

fn reverse<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    section(text, name, "! reverse sweep", "\u{0}")
}

/// What the forward sweep pushes that is not an array element (integer
/// and control values), in order.
fn scalar_pushes<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("call dfort_push(")?.strip_suffix(')'))
        .filter(|v| !v.contains('('))
        .collect()
}

/// Asserts that `lines` holds `want` in this order (other lines between).
fn in_order(lines: &[&str], want: &[&str]) {
    let mut at = 0;
    for w in want {
        match lines[at..].iter().position(|l| l == w) {
            Some(i) => at += i + 1,
            None => panic!(
                "`{w}` missing (in this order: {want:?}) in\n{}",
                lines.join("\n")
            ),
        }
    }
}

#[test]
fn figure_2c_stores_only_the_final_j_and_inverts_k_and_j() {
    let text = adjoint("papers/p003_fig2a.f90", "fig2a", Recording::Inversion);
    let name = "fig2a_b";
    assert_eq!(scalar_pushes(&forward(&text, name)), ["dfort_count1", "j"]);
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(j)",
            "call dfort_pop(dfort_count1)",
            "k = j - 2",
            "call dfort_pop(a(j))",
            "ab(k) = ab(k) + dfort_tb * a(j)",
            "j = k - 1",
            "end do",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn figure_2_without_inversion_stores_k_and_j_every_iteration() {
    let text = adjoint("papers/p003_fig2a.f90", "fig2a", Recording::Tbr);
    assert_eq!(
        scalar_pushes(&forward(&text, "fig2a_b")),
        ["k", "j", "dfort_count1"]
    );
}

#[test]
fn figure_7c_inverts_through_a_temporary() {
    let text = adjoint("papers/p003_fig7a.f90", "fig7a", Recording::Inversion);
    let name = "fig7a_b";
    assert_eq!(scalar_pushes(&forward(&text, name)), ["dfort_count1", "j"]);
    in_order(
        &reverse(&text, name),
        &[
            "dfort_i1 = j - 1",
            "k = dfort_i1 - 2",
            "call dfort_pop(a(k))",
            "j = dfort_i1",
            "call dfort_pop(a(j))",
            "j = k - 1",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn figure_8b_stores_no_index() {
    let text = adjoint("papers/p003_fig8_loop.f90", "fig8l", Recording::Inversion);
    let name = "fig8l_b";
    // Only the final i and j (once, after the loop): `l = 0; do while
    // (l < ilb); ...; l = l + 1` is a counted WHILE loop, whose trip count
    // and final l come from ilb.
    assert_eq!(scalar_pushes(&forward(&text, name)), ["i", "j"]);
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(j)",
            "call dfort_pop(i)",
            "dfort_count1 = max(0, ilb)",
            "l = dfort_count1",
            "dfort_i1 = i - 1 - j",
            "l = l - 1",
            "k = dfort_i1 - 2 * l",
            "m = k + 3 + l",
            "call dfort_pop(a(j))",
            "j = j - 4 - m",
            "i = dfort_i1",
            "call dfort_pop(a(i))",
            "i = k + j",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn figure_8_with_max_stores_k_chosen_by_the_heuristic() {
    let text = adjoint(
        "papers/p003_fig8_loop_max.f90",
        "fig8l_max",
        Recording::Inversion,
    );
    let name = "fig8l_max_b";
    let fwd = forward(&text, name);
    assert_eq!(scalar_pushes(&fwd), ["k", "i", "j"]);
    // k is pushed inside the loop, at the end of each iteration.
    in_order(&fwd, &["l = l + 1", "call dfort_push(k)", "end do"]);
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(k)",
            "l = l - 1",
            "m = k + 3 + l",
            "call dfort_pop(a(j))",
            "i = i - 1 - j",
            "j = j - 4 - m",
            "call dfort_pop(a(i))",
            "i = k + j",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn figure_14a_iccg_stores_ii_each_iteration_and_the_final_ipntp() {
    let text = adjoint("papers/p003_fig14a_iccg.f90", "iccg", Recording::Inversion);
    let name = "iccg_b";
    let fwd = forward(&text, name);
    // Per outer iteration: ii (copied before ii = ii/2 overwrites it) and
    // the inner loop's final i; after the outer loop: ii and ipntp.
    in_order(
        &fwd,
        &[
            "dfort_i1 = ii",
            "ii = ii / 2",
            "call dfort_push(i)",
            "call dfort_push(dfort_i1)",
            "end do",
            "call dfort_push(ii)",
            "call dfort_push(ipntp)",
        ],
    );
    assert!(
        !fwd.contains(&"call dfort_push(ipnt)"),
        "{}",
        fwd.join("\n")
    );
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(ipntp)",
            "call dfort_pop(ii)",
            "call dfort_pop(dfort_count1)",
            // The stored ii goes straight into ii: its final value is
            // not needed any more.
            "call dfort_pop(ii)",
            "dfort_i2 = ipntp - ii",
            "ipnt = dfort_i2",
            "call dfort_pop(i)",
            "i = i - 1",
            "ipntp = dfort_i2",
        ],
    );
    insta::assert_snapshot!(text);
}

#[test]
fn figure_4_nontriangular_system_stores_one_value_per_iteration() {
    let text = adjoint(
        "kernels/addr_nontriangular.f90",
        "addr_nontri",
        Recording::Inversion,
    );
    let name = "addr_nontri_b";
    let fwd = forward(&text, name);
    let pushes = scalar_pushes(&fwd);
    // One of the loop-carried k, l per iteration (k and l once after the
    // loop); j is inverted from k = j + 3.
    let per_iteration: Vec<&&str> = pushes.iter().filter(|p| p.starts_with("dfort_i")).collect();
    assert_eq!(per_iteration.len(), 1, "{}", fwd.join("\n"));
    assert!(!pushes.contains(&"j"), "{}", fwd.join("\n"));
    in_order(&reverse(&text, name), &["j = k - 3"]);
    let plain = adjoint(
        "kernels/addr_nontriangular.f90",
        "addr_nontri",
        Recording::Tbr,
    );
    assert_eq!(
        scalar_pushes(&forward(&plain, name)),
        ["j", "k", "l"],
        "without inversion every overwrite is stored"
    );
}

#[test]
fn figure_14b_monte_carlo_inverts_k2_and_k3_and_stores_m_where_it_is_reset() {
    // Figure 14(b) as printed, with an active use of k2, k3, j5 and m
    // (the printed loop computes no real value): a unit with jumps,
    // reversed through basic-block ids.
    let file = "papers/p003_fig14b_montecarlo_active.f";
    let (ind, dep) = (["d".to_string(), "x".to_string()], ["x".to_string()]);
    let named = Some((&ind[..], &dep[..]));
    let text = adjoint_of(file, "mcsrcha", named, Recording::Inversion);
    let name = "mcsrcha_b";
    let fwd = forward(&text, name);
    let pushes = scalar_pushes(&fwd);
    // §5.3: "k2 and k3 lend themselves to inversion given their final
    // values": never pushed.
    for v in ["k2", "k3"] {
        assert!(!pushes.contains(&v), "{v} pushed:\n{}", fwd.join("\n"));
    }
    // "m cannot be recovered in this fashion because the update at label
    // 460 depends on the condition involving m": m is pushed where it is
    // reset (at the outer loop's start and at 460) and nowhere else; the
    // block ids tell the reverse sweep which way the condition went.
    in_order(
        &fwd,
        &[
            "call dfort_push(m)",
            "m = 1",
            "k2 = k2 + 1",
            "call dfort_push(j5)",
            "j5 = zone(j4)",
            "450 k3 = k3 + 1",
            "455 m = m + 1",
            "460 call dfort_push(m)",
            "m = 1",
        ],
    );
    assert_eq!(
        fwd.iter()
            .filter(|l| l.ends_with("call dfort_push(m)"))
            .count(),
        2,
        "{}",
        fwd.join("\n")
    );
    // j5 comes from an indirection through zone: stored.
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(j5)",
            "k2 = k2 - 1",
            "k3 = k3 - 1",
            "m = m - 1",
            "call dfort_pop(m)",
        ],
    );
    // Without inversion k2, k3 and m are pushed at the end of every block
    // whose adjoint reads them.
    let plain = adjoint_of(file, "mcsrcha", named, Recording::Tbr);
    let plain_pushes = scalar_pushes(&forward(&plain, name));
    for v in ["k2", "k3", "m"] {
        assert!(
            plain_pushes.contains(&v),
            "{v} not pushed without inversion"
        );
    }
    insta::assert_snapshot!(text);
}

#[test]
fn figure_10_while_form_pushes_only_the_inner_loops_final_i_and_j() {
    // Both loops of Figure 10 as the paper writes them ('o = 0; do while
    // (o < olB); ...; o = o + 1') are counted WHILE loops: their trip
    // counts come from olB and ilB, l's final value from the inner
    // count; per outer iteration the forward sweep pushes only the inner
    // loop's final i and j, like the counted DO form.
    let text = adjoint("papers/p003_fig10.f90", "fig10", Recording::Inversion);
    let name = "fig10_b";
    let fwd = forward(&text, name);
    assert_eq!(scalar_pushes(&fwd), ["i", "j"]);
    assert!(
        !fwd.iter().any(|l| l.contains("dfort_count")),
        "{}",
        fwd.join("\n")
    );
    in_order(
        &fwd,
        &[
            "l = l + 1",
            "end do",
            "call dfort_push(i)",
            "call dfort_push(j)",
            "o = o + 1",
            "end do",
        ],
    );
    in_order(
        &reverse(&text, name),
        &[
            "dfort_count1 = max(0, olb)",
            "do dfort_k1 = 1, dfort_count1",
            "call dfort_pop(j)",
            "call dfort_pop(i)",
            "dfort_count2 = max(0, ilb)",
            "l = dfort_count2",
            "do dfort_k2 = 1, dfort_count2",
            "dfort_i1 = i - 1 - j",
            "l = l - 1",
            "k = dfort_i1 - 2 * l",
            "m = k + 3 + l",
            "call dfort_pop(a(j))",
            "j = j - 4 - m",
            "i = dfort_i1",
            "call dfort_pop(a(i))",
            "i = k + j",
            "end do",
            "end do",
        ],
    );
    let do_form = adjoint("papers/p003_fig10_do.f90", "fig10_do", Recording::Inversion);
    assert_eq!(scalar_pushes(&forward(&do_form, "fig10_do_b")), ["i", "j"]);
    // Without inversion the trip counts are computed all the same; the
    // indices are stored each time they are overwritten.
    let plain = adjoint("papers/p003_fig10.f90", "fig10", Recording::Tbr);
    let plain_fwd = forward(&plain, name);
    assert!(
        !plain_fwd.iter().any(|l| l.contains("dfort_count")),
        "{}",
        plain_fwd.join("\n")
    );
    insta::assert_snapshot!(text);
}

#[test]
fn counted_while_loops_get_trip_counts_and_final_counters_from_their_bounds() {
    let text = adjoint(
        "kernels/counted_while.f90",
        "counted_while",
        Recording::Inversion,
    );
    let name = "counted_while_b";
    let fwd = forward(&text, name);
    // Only the last loop, whose bound changes in its body, counts its
    // trips; the bound nb, overwritten after its loop, is recorded.
    assert_eq!(scalar_pushes(&fwd), ["nb", "dfort_count8", "i"]);
    in_order(
        &reverse(&text, name),
        &[
            "call dfort_pop(nb)",
            // m = 0; do while (m < nb); ...; m = m + 1
            "dfort_count7 = max(0, nb)",
            "m = dfort_count7",
            // The inner bound nb of the nested loop is recomputed by the
            // outer loop's plan before the inner count is.
            "dfort_count5 = max(0, 3)",
            "o = dfort_count5",
            "nb = o + n / 3",
            "dfort_count6 = max(0, nb)",
            "m = 1 + dfort_count6",
            // k = 5; do while (k < n - 20): never runs for small n.
            "dfort_count4 = max(0, n - 20 - 5)",
            "k = 5 + dfort_count4",
            // k = 0; do while (k .lt. n/2 + 1); ...; k = 3 + k
            "dfort_count3 = max(0, (n / 2 + 1 + 2) / 3)",
            "k = dfort_count3 * 3",
            // j = first; do while (n + 4 > j); ...; j = j + two
            "dfort_count2 = max(0, (n + 4 + 4) / 2)",
            "j = dfort_count2 * 2 - 3",
            // i = 1; do while (i <= n); ...; i = i + 1
            "dfort_count1 = max(0, n)",
            "i = 1 + dfort_count1",
        ],
    );
}

/// Whether the DO WHILE loops of `src` (one subroutine `s`) are counted,
/// in statement order.
fn counted(src: &str) -> Vec<bool> {
    let ws = from_sources(vec![(std::path::PathBuf::from("cw.f90"), src.to_string())]);
    let u = unit(&ws, "s");
    let found = dfort_analysis::counted_while::in_unit(&ws.program, u);
    u.stmts
        .iter()
        .filter(|st| {
            matches!(
                st.kind,
                dfort_ir::StmtKind::Do {
                    control: dfort_ir::DoControl::While(_),
                    ..
                }
            )
        })
        .map(|st| found.contains_key(&st.id))
        .collect()
}

#[test]
fn counted_while_recognition_follows_its_contract() {
    let head = "subroutine s(n, a)\n  integer :: n, i, j\n  integer, parameter :: c = 2\n  real(8) :: a(100)\n";
    let yes = [
        "  i = 0\n  do while (i < n)\n    a(i+1) = 1\n    i = i + 1\n  end do\n",
        "  i = 1\n  do while (i .le. n)\n    i = c + i\n  end do\n",
        "  i = -c\n  do while (n >= i)\n    i = i + 3\n  end do\n",
        "  i = 0\n  do while (n*2 - 1 > i)\n    if (a(1) > 0) a(2) = 1\n    i = i + 1\n  end do\n",
    ];
    for body in yes {
        assert_eq!(counted(&format!("{head}{body}end\n")), [true], "{body}");
    }
    let no = [
        // not an initialisation just before the loop
        "  i = 0\n  j = 1\n  do while (i < n)\n    i = i + 1\n  end do\n",
        // a start that is not a constant
        "  i = n\n  do while (i < 100)\n    i = i + 1\n  end do\n",
        // a decreasing step, a variable step, a zero step
        "  i = 0\n  do while (i < n)\n    i = i - 1\n  end do\n",
        "  i = 0\n  do while (i < n)\n    i = i + j\n  end do\n",
        "  i = 0\n  do while (i < n)\n    i = i + 0\n  end do\n",
        // the counter written twice, or inside a branch
        "  i = 0\n  do while (i < n)\n    i = i + 1\n    i = i + 1\n  end do\n",
        "  i = 0\n  do while (i < n)\n    i = i + 1\n    if (a(1) > 0) i = 5\n  end do\n",
        // the bound written in the body
        "  i = 0\n  do while (i < n)\n    n = n - 1\n    i = i + 1\n  end do\n",
        // a call that may write the counter
        "  i = 0\n  do while (i < n)\n    call f(i)\n    i = i + 1\n  end do\n",
        // a bound that is not an integer, or references a function
        "  i = 0\n  do while (i < a(1))\n    i = i + 1\n  end do\n",
        "  i = 0\n  do while (i < g(n))\n    i = i + 1\n  end do\n",
        // other comparisons
        "  i = 0\n  do while (i /= n)\n    i = i + 1\n  end do\n",
        "  i = 0\n  do while (n < i)\n    i = i + 1\n  end do\n",
        // a jump out of the loop
        "  i = 0\n  do while (i < n)\n    if (a(1) > 0) return\n    i = i + 1\n  end do\n",
    ];
    for body in no {
        assert_eq!(counted(&format!("{head}{body}end\n")), [false], "{body}");
    }
}
