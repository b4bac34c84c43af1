//! Golden text of generated derivatives (the numbers are checked in
//! `derivatives.rs`): a change in what dfort writes shows up as a diff to
//! review. Regenerate with `INSTA_UPDATE=always cargo test --test e2e
//! codegen_snapshots` and read the diff.

use crate::support::*;

/// The tangent and the adjoint of `root` in fixture `file`, as one text,
/// each statement's block headed by the comment naming it.
fn derivatives(file: &str, root: &str) -> String {
    let ws = fixture(file);
    let u = unit(&ws, root);
    let path = fixtures().join(file);
    let origin = dfort_ide::origins::renderer(&ws.snap, path.parent());
    let (facts, id) = root_request(
        &ws.program,
        &u.name,
        None,
        dfort_codegen::adjoint::Recording::Inversion,
    );
    let tangent = dfort_codegen::tangent::tangent_located(&facts, id, "tangent", &origin)
        .unwrap_or_else(|e| panic!("tangent refused: {e:?}"));
    let (adjoint, _) = dfort_codegen::adjoint::adjoint_located(&facts, id, "adjoint", &origin)
        .unwrap_or_else(|e| panic!("adjoint refused: {e:?}"));
    format!("{tangent}\n{adjoint}")
}

#[test]
fn bratu() {
    insta::assert_snapshot!(derivatives("papers/p000_bratu.f", "bratu"));
}

#[test]
fn time_stepping_loop_calling_a_subroutine() {
    insta::assert_snapshot!(derivatives("kernels/timestep.f90", "timestep"));
}

#[test]
fn user_function_in_expressions() {
    insta::assert_snapshot!(derivatives("kernels/user_function.f90", "user_function"));
}

#[test]
fn goto_code_reversed_by_block_ids() {
    insta::assert_snapshot!(derivatives("kernels/goto_f77.f", "gotok"));
}

#[test]
fn common_block_shared_with_a_callee() {
    insta::assert_snapshot!(derivatives("kernels/common_block.f", "cbroot"));
}

#[test]
fn module_procedures() {
    insta::assert_snapshot!(derivatives("kernels/module_proc.f90", "residual"));
}

#[test]
fn array_assignments_and_intrinsics() {
    insta::assert_snapshot!(derivatives("kernels/array_ops.f90", "array_ops"));
}
