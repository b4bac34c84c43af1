//! Snapshot tests of `dfort ir` dumps for every fixture. Regenerate with
//! `INSTA_UPDATE=always cargo test --test e2e ir_snapshots` (or `cargo insta
//! review`) and review the diff.

use crate::support::*;

#[test]
fn ir_dumps() {
    insta::glob!("fixtures/{papers,free,fixed}/*.{f,f90}", |path| {
        let ws = load_one(path);
        let dump = ws.dump();
        insta::assert_snapshot!(dump);
    });
}
