//! Prints the syntax trees dfort builds for a file (after fixed-form
//! normalisation, one tree per unit): a development aid.
use dfort_syntax::tree_sitter::Node;
use dfort_syntax::FortranParser;

fn walk(n: Node, src: &str, depth: usize, field: Option<&str>) {
    let leaf = if n.child_count() == 0 {
        format!(" {:?}", src.get(n.start_byte()..n.end_byte()).unwrap_or(""))
    } else {
        String::new()
    };
    let mark = if n.is_missing() {
        "MISSING "
    } else if n.is_named() {
        ""
    } else {
        "'"
    };
    println!(
        "{}{}{}{} [{}:{}]{}",
        "  ".repeat(depth),
        field.map(|f| format!("{f}: ")).unwrap_or_default(),
        mark,
        n.kind(),
        n.start_position().row + 1,
        n.start_position().column + 1,
        leaf
    );
    let mut c = n.walk();
    for (i, ch) in n.children(&mut c).enumerate() {
        walk(ch, src, depth + 1, n.field_name_for_child(i as u32));
    }
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tree FILE");
        return;
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("cannot read {path}");
        return;
    };
    let p = std::path::PathBuf::from(&path);
    let form = dfort_syntax::source_form::form_for_path(&p, Default::default());
    let parsed = FortranParser::new().parse(p, text, form);
    for c in &parsed.chunks {
        walk(c.tree.root_node(), parsed.parse_text(), 0, None);
    }
}
