//! Times the phases of one edit through the host on the file given:
//! `cargo run --release -p dfort-ide --example edit_timing -- big.f90`.
use dfort_ide::hints::{inlay_hints, HintKinds};
use dfort_ide::host::{Host, TextChange};
use dfort_syntax::TextRange;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let path = PathBuf::from(std::env::args().nth(1).expect("a file"));
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut host = Host::default();
    let t = Instant::now();
    host.set_text(&path, &text, true, 1);
    let snap = host.snapshot();
    println!("open: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let rss = || {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    println!("after open: {}", rss());
    drop(snap);
    let sites: Vec<usize> = text.match_indices("0.5_dp").map(|(i, _)| i).collect();
    let (mut ts, mut ta, mut td, mut th) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for k in 0..40 {
        let at = (sites[(k * 7919) % sites.len()] + 3) as u32;
        for (r, s) in [((at, at), "7"), ((at, at + 1), "")] {
            host.edit(
                &path,
                &[TextChange {
                    range: Some(TextRange::new(r.0, r.1)),
                    text: s.into(),
                }],
                k as i32 + 2,
            );
            let t = Instant::now();
            let snap = host.snapshot();
            ts.push(t.elapsed().as_secs_f64() * 1e3);
            if k < 2 {
                println!(
                    "re-analysed (activity, TBR): {:?}",
                    snap.analysis.recomputed()
                );
            }
            let t = Instant::now();
            std::hint::black_box(dfort_ide::analysis::analyse(&snap.program, &[], None));
            ta.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(snap.diagnostics(&path));
            td.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(inlay_hints(
                &snap,
                &path,
                TextRange::new(at.saturating_sub(2000), at + 2000),
                HintKinds::default(),
            ));
            th.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    // Structural: an `end if` deleted and restored.
    let ends: Vec<usize> = text.match_indices("end if\n").map(|(i, _)| i).collect();
    let mut tstruct = Vec::new();
    for k in 0..10 {
        let at = ends[(k * 104_729) % ends.len()] as u32;
        for (r, s) in [((at, at + 6), ""), ((at, at), "end if")] {
            host.edit(
                &path,
                &[TextChange {
                    range: Some(TextRange::new(r.0, r.1)),
                    text: s.into(),
                }],
                k as i32 + 200,
            );
            let t = Instant::now();
            let snap = host.snapshot();
            tstruct.push(t.elapsed().as_secs_f64() * 1e3);
            if k < 1 {
                println!(
                    "structural: {} units, re-analysed {:?}",
                    snap.program.units.len(),
                    snap.analysis.recomputed()
                );
            }
        }
    }
    println!("structural snapshot median {:.1} ms", {
        tstruct.sort_by(|a, b| a.total_cmp(b));
        tstruct[tstruct.len() / 2]
    });
    println!("after edits: {}", rss());
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!(
        "median per edit: snapshot {:.1} ms (of which a full analyse alone {:.1} ms), diagnostics {:.1} ms, hints {:.1} ms",
        med(&mut ts), med(&mut ta), med(&mut td), med(&mut th)
    );
}
