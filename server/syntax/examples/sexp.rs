//! Prints the syntax tree of the file given.
fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).expect("a file"));
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut p = dfort_syntax::FortranParser::new();
    let parsed = p.parse(path.clone(), text, dfort_syntax::SourceForm::Free);
    for c in &parsed.chunks {
        println!("{}", c.tree.root_node().to_sexp());
    }
}
