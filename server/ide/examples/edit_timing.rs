//! Times the phases of an edit through the host on the file given:
//! `cargo run --release -p dfort-ide --example edit_timing -- big.f90`
//! (for example the file `cargo xtask bench --lines 20000 --file-lines 20000
//! --write-to DIR` writes). Character edits type a digit into `0.5_dp`
//! and delete it; structural ones delete an `end if` and restore it.
use dfort_ide::hints::{inlay_hints, HintKinds};
use dfort_ide::host::{Host, Snapshot, TextChange};
use dfort_syntax::TextRange;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// Applies one edit and returns the new snapshot with its build time
/// (its analyses included).
fn edit(host: &mut Host, path: &Path, range: (u32, u32), text: &str) -> (Arc<Snapshot>, f64) {
    let change = TextChange {
        range: Some(TextRange::new(range.0, range.1)),
        text: text.into(),
    };
    host.edit(path, &[change], 0);
    let t = Instant::now();
    let snap = host.snapshot();
    snap.analysis();
    (snap, ms(t))
}

fn main() {
    let path = PathBuf::from(std::env::args().nth(1).expect("a file"));
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut host = Host::default();
    let t = Instant::now();
    host.set_text(&path, &text, true, 1);
    host.snapshot().analysis();
    println!("open: {:.1} ms, {}", ms(t), rss());
    let sites: Vec<u32> = text
        .match_indices("0.5_dp")
        .map(|(i, _)| i as u32 + 3)
        .collect();
    let ends: Vec<u32> = text
        .match_indices("end if\n")
        .map(|(i, _)| i as u32)
        .collect();
    let (mut chars, mut full, mut diags, mut hints, mut structural) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for k in 0..40 {
        let at = sites[(k * 7919) % sites.len()];
        for (range, s) in [((at, at), "7"), ((at, at + 1), "")] {
            let (snap, t) = edit(&mut host, &path, range, s);
            chars.push(t);
            if k == 0 {
                println!(
                    "character edit re-analysed (activity, TBR): {:?}",
                    snap.analysis().recomputed()
                );
            }
            let t = Instant::now();
            std::hint::black_box(dfort_analysis::facts::analyse(
                &snap.program,
                &dfort_analysis::facts::Request::default(),
                None,
            ));
            full.push(ms(t));
            let t = Instant::now();
            std::hint::black_box(snap.diagnostics(&path));
            diags.push(ms(t));
            let t = Instant::now();
            let around = TextRange::new(at.saturating_sub(2000), at + 2000);
            std::hint::black_box(inlay_hints(&snap, &path, around, HintKinds::default()));
            hints.push(ms(t));
        }
    }
    for k in 0..10 {
        let at = ends[(k * 104_729) % ends.len()];
        for (range, s) in [((at, at + 6), ""), ((at, at), "end if")] {
            let (snap, t) = edit(&mut host, &path, range, s);
            structural.push(t);
            if k == 0 {
                println!(
                    "structural edit re-analysed (activity, TBR): {:?}",
                    snap.analysis().recomputed()
                );
            }
        }
    }
    println!(
        "median snapshot per edit: character {:.1} ms, structural {:.1} ms; a full analysis {:.1} ms; diagnostics {:.1} ms; hints {:.1} ms; {}",
        median(chars),
        median(structural),
        median(full),
        median(diags),
        median(hints),
        rss()
    );
}
