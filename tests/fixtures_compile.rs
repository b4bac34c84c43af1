//! The fixtures are real Fortran: every paper transcription, construct
//! fixture and `_ok` diagnostics fixture compiles with gfortran
//! (`-fsyntax-only`). gfortran is required (CI installs it); set
//! DFORT_SKIP_GFORTRAN=1 to skip on a machine without it.

use crate::support::*;
use std::process::Command;

#[test]
fn fixtures_compile_with_gfortran() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        eprintln!("skipped: DFORT_SKIP_GFORTRAN is set");
        return;
    }
    let version = Command::new("gfortran").arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "gfortran is not installed (apt-get install -y gfortran, or set DFORT_SKIP_GFORTRAN=1)"
    );
    let out = std::env::temp_dir().join(format!("dfort-fc-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut files = Vec::new();
    for dir in [
        "papers",
        "free",
        "fixed",
        "interproc",
        "analysis",
        "kernels",
        "consistency",
        "consistency/name_only_root",
        "consistency/configured_root",
    ] {
        files.extend(fortran_files(&fixtures().join(dir)));
    }
    files.extend(
        fortran_files(&fixtures().join("diagnostics"))
            .into_iter()
            .filter(|p| p.file_stem().unwrap().to_string_lossy().ends_with("_ok")),
    );
    // Modules first so that files using them find their .mod files.
    files.sort_by_key(|p| !p.to_string_lossy().contains("multi_mod"));
    let mut compiled = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        if name == "bratu_73col.f" {
            // Needs the longer line length, like the paper's listing.
            let st = Command::new("gfortran")
                .args(["-fsyntax-only", "-ffixed-line-length-none", "-J"])
                .arg(&out)
                .arg(f)
                .output()
                .unwrap();
            assert!(
                st.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&st.stderr)
            );
            compiled += 1;
            continue;
        }
        let mut cmd = Command::new("gfortran");
        cmd.args(["-fsyntax-only", "-std=legacy", "-J"])
            .arg(&out)
            .arg("-I")
            .arg(&out);
        let st = cmd.arg(f).output().unwrap();
        assert!(
            st.status.success(),
            "{} does not compile:\n{}",
            f.display(),
            String::from_utf8_lossy(&st.stderr)
        );
        compiled += 1;
    }
    std::fs::remove_dir_all(&out).ok();
    assert!(compiled >= 80, "only {compiled} files compiled");
    println!("{compiled} fixtures compile with gfortran");
}
