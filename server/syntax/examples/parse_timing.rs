//! Times parsing alone over the files given on the command line: whole
//! files versus one tree per unit (the front end's mode).
use dfort_syntax::{FortranParser, SourceForm};
use std::time::Instant;

fn main() {
    let files: Vec<(std::path::PathBuf, String)> = std::env::args()
        .skip(1)
        .filter_map(|p| Some((p.clone().into(), std::fs::read_to_string(&p).ok()?)))
        .collect();
    let mut ts = dfort_syntax::tree_sitter::Parser::new();
    ts.set_language(&dfort_syntax::language()).ok();
    let t = Instant::now();
    for (p, text) in &files {
        let form = dfort_syntax::source_form::form_for_path(p, Default::default());
        let src = match form {
            SourceForm::Fixed(o) => {
                dfort_syntax::fixed_form::normalize_fixed(text, o.line_length).text
            }
            SourceForm::Free => text.clone(),
        };
        let _ = ts.parse(&src, None);
    }
    println!("whole files: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let mut fp = FortranParser::new();
    let t = Instant::now();
    for (p, text) in &files {
        let form = dfort_syntax::source_form::form_for_path(p, Default::default());
        let _ = fp.parse(p.clone(), text.clone(), form);
    }
    println!("per unit: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let mut n = 0;
    for (p, text) in &files {
        let form = dfort_syntax::source_form::form_for_path(p, Default::default());
        let src = match form {
            SourceForm::Fixed(o) => {
                dfort_syntax::fixed_form::normalize_fixed(text, o.line_length).text
            }
            SourceForm::Free => text.clone(),
        };
        for c in dfort_syntax::chunks::split_units(&src) {
            let sub = &src[c.range.start as usize..c.range.end as usize];
            let _ = ts.parse(sub, None);
            n += 1;
        }
    }
    println!(
        "per unit substrings ({n}): {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}

#[allow(dead_code)]
fn unused() {}
