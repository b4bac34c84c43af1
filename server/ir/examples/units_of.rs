//! Prints the units lowered from the file given, and the diagnostics.
fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).expect("a file"));
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut p = dfort_syntax::FortranParser::new();
    let parsed = p.parse(path.clone(), text, dfort_syntax::SourceForm::Free);
    for c in &parsed.chunks {
        let flat = dfort_syntax::flat::FlatTree::new(&c.tree);
        for ch in flat.root().named_children() {
            let kids: Vec<&str> = ch.named_children().map(|x| x.kind()).collect();
            println!("top: {} -> {kids:?}", ch.kind());
        }
    }
    let lf = dfort_ir::lower::lower_file(&parsed, dfort_ir::FileId(0));
    for u in &lf.units {
        println!("unit {} {:?}", u.name, u.kind);
    }
    for d in parsed.diagnostics.iter().chain(&lf.diagnostics) {
        println!("{d:?}");
    }
}
