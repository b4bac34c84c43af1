//! Times each front-end phase on one thread over the files given.
use dfort_ir::lower::lower_file;
use dfort_syntax::FortranParser;
use std::time::Instant;

fn main() {
    let files: Vec<(std::path::PathBuf, String)> = std::env::args()
        .skip(1)
        .filter_map(|p| Some((p.clone().into(), std::fs::read_to_string(&p).ok()?)))
        .collect();
    let mut fp = FortranParser::new();
    let (mut tp, mut tl, mut td, mut tf) = (0.0, 0.0, 0.0, 0.0);
    let mut lowered = Vec::new();
    for (i, (p, text)) in files.iter().enumerate() {
        let form = dfort_syntax::source_form::form_for_path(p, Default::default());
        let t = Instant::now();
        let parsed = fp.parse(p.clone(), text.clone(), form);
        tp += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let reps: usize = std::env::var("LOWER_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let mut l = lower_file(&parsed, dfort_ir::FileId(i as u32));
        for _ in 1..reps {
            l = lower_file(&parsed, dfort_ir::FileId(i as u32));
        }
        tl += t.elapsed().as_secs_f64();
        let t = Instant::now();
        for c in &parsed.chunks {
            std::hint::black_box(dfort_syntax::flat::FlatTree::new(&c.tree).len());
        }
        tf += t.elapsed().as_secs_f64();
        let t = Instant::now();
        drop(parsed);
        td += t.elapsed().as_secs_f64();
        lowered.push(l);
    }
    let t = Instant::now();
    let (prog, _) = dfort_ir::link::link(lowered);
    let tk = t.elapsed().as_secs_f64();
    println!(
        "parse {:.0} ms, lower {:.0} ms, flatten alone {:.0} ms, drop trees {:.0} ms, link {:.0} ms ({} units)",
        tp * 1e3,
        tl * 1e3,
        tf * 1e3,
        td * 1e3,
        tk * 1e3,
        prog.units.len()
    );
}
