//! The tree-sitter queries of `grammar-queries/`, compiled into the
//! binary. A unit test compiles every `.scm` file of that folder against
//! the grammar, so a query the grammar no longer matches fails the tests
//! instead of silently finding nothing.

/// `!$ad` directive comments (the IR lowering attaches them to units).
pub const DIRECTIVES: &str = include_str!("../../../grammar-queries/directives.scm");

/// Highlighting of `!$ad` directives for editors.
pub const HIGHLIGHT_DIRECTIVES: &str =
    include_str!("../../../grammar-queries/highlights-directives.scm");

#[cfg(test)]
mod tests {
    use tree_sitter::{Parser, Query, QueryCursor, StreamingIterator};

    #[test]
    fn every_query_in_grammar_queries_compiles_against_the_grammar() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../grammar-queries");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).expect("grammar-queries/ is readable") {
            let p = e.expect("a directory entry").path();
            if p.extension().is_some_and(|x| x == "scm") {
                let text = std::fs::read_to_string(&p).expect("a readable query");
                if let Err(err) = Query::new(&crate::language(), &text) {
                    panic!("{}: {err}", p.display());
                }
                n += 1;
            }
        }
        assert!(n >= 2, "only {n} queries found in {}", dir.display());
    }

    #[test]
    fn the_directive_queries_find_directives_and_only_them() {
        let src = "subroutine s(x)\n  !$ad independent(x)\n  ! an ordinary comment\n  !$AD dependent(x)\n  !$openad DEPENDENT(x)\n  ! $openad no\nend\n";
        let mut parser = Parser::new();
        parser
            .set_language(&crate::language())
            .expect("the grammar loads");
        let tree = parser.parse(src, None).expect("a tree");
        for q in [super::DIRECTIVES, super::HIGHLIGHT_DIRECTIVES] {
            let query = Query::new(&crate::language(), q).expect("the query compiles");
            let mut cursor = QueryCursor::new();
            let mut found = Vec::new();
            let mut it = cursor.matches(&query, tree.root_node(), src.as_bytes());
            while let Some(m) = it.next() {
                // `#match?` is a text predicate the cursor applies.
                for c in m.captures {
                    found.push(&src[c.node.byte_range()]);
                }
            }
            found.sort_by_key(|f| src.find(f));
            assert_eq!(
                found,
                [
                    "!$ad independent(x)",
                    "!$AD dependent(x)",
                    "!$openad DEPENDENT(x)"
                ]
            );
        }
    }
}
