//! `cargo xtask code-size`: how much code the derivatives of every kernel
//! of a manifest (tests/kernels.toml) are, and whether gfortran warns
//! about it.
//!
//! For each `[[kernel]]` the default adjoint (TBR, address inversion) and
//! the tangent are generated as `dfort adjoint` and `dfort tangent` write
//! them, and measured in characters without blanks and comments (what a
//! reader reads; the runtime module is not counted). With `--warnings`
//! each is compiled with `gfortran -Wall` beside the original sources
//! and the runtime, and the warnings gfortran prints about the generated
//! file are counted. With `--baseline FILE` (this command's earlier
//! output) the totals are compared with that run's, kernel by kernel
//! over the kernels both measured.

use crate::bench_adjoint::{base_of, load_manifest, Kernel};
use dfort::session::Session;
use dfort::verify::{compile_in_order, runtime_object, write_originals, Scratch};
use dfort_analysis::decisions::Recording;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct CodeSizeArgs {
    /// The kernel manifest; its `files` are relative to the directory
    /// above the manifest's (the repository root for tests/kernels.toml).
    #[arg(long, default_value = "tests/kernels.toml")]
    manifest: PathBuf,
    /// Only the kernels whose root is NAME (repeatable).
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
    /// Compile every derivative with `gfortran -Wall` and count the
    /// warnings about it.
    #[arg(long)]
    warnings: bool,
    /// An earlier output of this command: print the change against it.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
}

/// One kernel's measures: characters of its adjoint and tangent (`None`
/// when refused) and, when asked, gfortran's warnings about them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Sizes {
    adjoint: Option<usize>,
    tangent: Option<usize>,
    warnings: Option<usize>,
}

/// The characters of `text` a reader reads: no blanks, no comments (from
/// a `!` outside a character literal to the end of the line).
pub fn characters(text: &str) -> usize {
    text.lines()
        .map(|line| {
            let mut quote: Option<char> = None;
            let mut n = 0;
            for c in line.chars() {
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None if c == '\'' || c == '"' => quote = Some(c),
                    None if c == '!' => break,
                    None => {}
                }
                if !c.is_whitespace() {
                    n += 1;
                }
            }
            n
        })
        .sum()
}

/// The warnings in gfortran's messages that are about `file`.
fn warnings_about(stderr: &str, file: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut place: Option<&str> = None;
    for line in stderr.lines() {
        if line.starts_with(file) && line[file.len()..].starts_with(':') {
            place = Some(line);
        } else if line.starts_with(|c: char| c.is_ascii_alphanumeric()) && !line.contains(':') {
            // A continuation of the message (source line excerpt).
        } else if let Some(w) = line.strip_prefix("Warning: ") {
            if let Some(p) = place.take() {
                out.push(format!("{p} {w}"));
            }
        } else if line.contains(": ") && !line.starts_with(' ') {
            place = None;
        }
    }
    out
}

/// Compiles `text` as `file` with `-Wall` beside the originals and the
/// runtime; the warnings about it (an error counts as one).
fn warnings(sources: &[(&Path, &str)], file: &str, text: &str) -> Result<Vec<String>, String> {
    let scratch = Scratch::new("code-size")?;
    let dir = scratch.dir.as_path();
    let originals = write_originals(&scratch, sources)?;
    compile_in_order(dir, &originals, &[])
        .map_err(|e| format!("the original sources do not compile: {e}"))?;
    runtime_object(dir, &[])?;
    scratch.write(file, text)?;
    let out = Command::new("gfortran")
        .args(["-Wall", "-c", file, "-o", "derivative.o"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run gfortran ({e})"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut found = warnings_about(&stderr, file);
    if !out.status.success() {
        found.push(format!("{file} does not compile"));
    }
    Ok(found)
}

fn measure(kernel: &Kernel, base: &Path, warn: bool) -> Result<(Sizes, Vec<String>), String> {
    let (files, spec) = kernel.root_spec(base);
    let (session, root, _) = Session::for_root_with(&files, spec, Recording::Inversion, None)?;
    let facts = session.snap.analysis();
    let header = "cargo xtask code-size";
    let adjoint = dfort_codegen::adjoint::adjoint_of(facts, root, header)
        .ok()
        .map(|(t, _)| t);
    let tangent = dfort_codegen::tangent::tangent_of(facts, root, header).ok();
    let mut sizes = Sizes {
        adjoint: adjoint.as_deref().map(characters),
        tangent: tangent.as_deref().map(characters),
        warnings: None,
    };
    let mut messages = Vec::new();
    if warn {
        let sources = session.sources();
        for (file, text) in [("adjoint.f90", &adjoint), ("tangent.f90", &tangent)] {
            if let Some(text) = text {
                messages.extend(warnings(&sources, file, text)?);
            }
        }
        sizes.warnings = Some(messages.len());
    }
    Ok((sizes, messages))
}

fn cell(v: Option<usize>) -> String {
    v.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
}

/// Reads the rows of an earlier output: kernel, adjoint, tangent.
fn parse_rows(text: &str) -> BTreeMap<String, Sizes> {
    let number = |w: &str| w.parse::<usize>().ok();
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [k, a, t, rest @ ..] if rest.len() <= 1 && (number(a).is_some() || *a == "-") => {
                    Some((
                        k.to_string(),
                        Sizes {
                            adjoint: number(a),
                            tangent: number(t),
                            warnings: rest.first().and_then(|w| number(w)),
                        },
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

/// The totals of `now` against `before` over the kernels both measured.
fn comparison(before: &BTreeMap<String, Sizes>, now: &BTreeMap<String, Sizes>) -> String {
    let mut out = String::new();
    for (what, get) in [
        (
            "adjoint",
            (|s: &Sizes| s.adjoint) as fn(&Sizes) -> Option<usize>,
        ),
        ("tangent", |s: &Sizes| s.tangent),
    ] {
        let pairs: Vec<(usize, usize)> = now
            .iter()
            .filter_map(|(k, s)| Some((get(before.get(k)?)?, get(s)?)))
            .collect();
        let (b, n): (usize, usize) = pairs.iter().fold((0, 0), |(b, n), (x, y)| (b + x, n + y));
        let change = match (b, n) {
            (_, 0) | (0, _) => String::new(),
            _ if n > b => format!(": {:.3}x larger", n as f64 / b as f64),
            _ => format!(": {:.3}x smaller", b as f64 / n as f64),
        };
        let _ = writeln!(
            out,
            "{what}: {n} characters against {b} over {} kernel(s){change}",
            pairs.len()
        );
    }
    out
}

pub fn run(args: CodeSizeArgs) -> ExitCode {
    match code_size(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn code_size(args: &CodeSizeArgs) -> Result<String, String> {
    let manifest = load_manifest(&args.manifest)?;
    let base = base_of(&args.manifest);
    let kernels = crate::bench_adjoint::chosen(&manifest, &args.manifest, &args.kernels)?;
    let measured: Vec<Result<(Sizes, Vec<String>), String>> = kernels
        .par_iter()
        .map(|k| measure(k, &base, args.warnings))
        .collect();
    let mut out = String::new();
    let mut rows = BTreeMap::new();
    let mut notes = Vec::new();
    let _ = writeln!(
        out,
        "{:<28} {:>8} {:>8} {:>8}",
        "kernel", "adjoint", "tangent", "warnings"
    );
    for (k, m) in kernels.iter().zip(measured) {
        // Roots repeat across kernels (`bulk_flux`, `xgemm`): the second
        // is `name#2`, and so on.
        let mut name = k.root.clone();
        let mut n = 1;
        while rows.contains_key(&name) {
            n += 1;
            name = format!("{}#{n}", k.root);
        }
        match m {
            Ok((s, messages)) => {
                let _ = writeln!(
                    out,
                    "{:<28} {:>8} {:>8} {:>8}",
                    name,
                    cell(s.adjoint),
                    cell(s.tangent),
                    cell(s.warnings)
                );
                notes.extend(messages.into_iter().map(|w| format!("{name}: {w}")));
                rows.insert(name, s);
            }
            Err(e) => notes.push(format!("{name}: failed: {e}")),
        }
    }
    let sum = |f: fn(&Sizes) -> Option<usize>| rows.values().filter_map(f).sum::<usize>();
    let _ = writeln!(
        out,
        "{} kernel(s): adjoints {} characters, tangents {} characters{}",
        rows.len(),
        sum(|s| s.adjoint),
        sum(|s| s.tangent),
        match args.warnings {
            true => format!(", {} gfortran -Wall warning(s)", sum(|s| s.warnings)),
            false => String::new(),
        }
    );
    for n in &notes {
        let _ = writeln!(out, "# {n}");
    }
    if let Some(path) = &args.baseline {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        out.push_str(&comparison(&parse_rows(&text), &rows));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_skip_blanks_and_comments_but_not_quoted_bangs() {
        let text = "! header\n  x = a + b  ! why\n  print *, 'a!b'\n\n";
        assert_eq!(characters(text), "x=a+b".len() + "print*,'a!b'".len());
    }

    #[test]
    fn warnings_are_those_about_the_file() {
        let stderr = "adjoint.f90:12:3:\n\n   12 |   integer :: k\n      |   1\nWarning: Unused variable 'k' declared at (1) [-Wunused-variable]\nsrc0.f90:3:1:\n\nWarning: something else\n";
        let w = warnings_about(stderr, "adjoint.f90");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("Unused variable 'k'"));
    }

    #[test]
    fn rows_read_back_and_compare() {
        let before = parse_rows("kernel adjoint tangent warnings\nbratu 400 200 3\nf - 50\n");
        assert_eq!(before["bratu"].adjoint, Some(400));
        assert_eq!(before["f"].adjoint, None);
        let now = parse_rows("bratu 200 100\n");
        let c = comparison(&before, &now);
        assert!(
            c.contains("adjoint: 200 characters against 400 over 1 kernel(s): 2.000x smaller"),
            "{c}"
        );
        let back = comparison(&now, &before);
        assert!(
            back.contains("adjoint: 400 characters against 200 over 1 kernel(s): 2.000x larger"),
            "{back}"
        );
    }
}
