//! Lowering of one parsed file's syntax trees to IR units (phase 1 of two;
//! [`crate::link`] resolves names across units and files afterwards).
//!
//! Contract: never panics on any tree (ERROR and MISSING nodes are skipped:
//! the parser already reported them); every construct it does not support
//! yields an `unsupported` diagnostic naming it and an
//! `StmtKind::Unsupported` statement, so later stages can refuse to
//! differentiate it instead of ignoring it silently.

mod concurrent;
pub(crate) mod decl;
pub(crate) mod expr;
pub mod io;
mod stmt;

use crate::cfg::Cfg;
use crate::idx::IdVec;
use crate::ir::*;
use dfort_syntax::ad_directives::{self, Reading};
use dfort_syntax::flat::{field_id as flat_field_id, FNode, FlatTree};
use dfort_syntax::rules::{
    DIRECTIVE_OUTSIDE_UNIT, DUPLICATE_LABEL, IGNORED_DIRECTIVE, INCOMPLETE_UNIT, UNDEFINED_LABEL,
    UNSUPPORTED,
};
use dfort_syntax::tree_sitter::{Node, Query, QueryCursor, StreamingIterator};
use dfort_syntax::{Diagnostic, ParsedFile, Rule};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Units of one file, in source order (hosts before the procedures they
/// contain). `UnitId`s and `parent` refer to positions in this table
/// until [`crate::link`] renumbers them.
#[derive(Clone)]
pub struct LoweredFile {
    pub file: FileId,
    pub units: IdVec<UnitId, Unit>,
    pub diagnostics: Vec<Diagnostic>,
    /// Set when this "file" is one procedure of a module lowered on its
    /// own (the language server lowers module procedures one by one): the
    /// position, in the list given to [`crate::link::link`], of the
    /// lowered head of the module that contains its top-level units.
    pub contained_in: Option<usize>,
}

/// Lowers every program unit of `file`.
pub fn lower_file(parsed: &ParsedFile, file: FileId) -> LoweredFile {
    let flats: Vec<FlatTree> = parsed
        .chunks
        .iter()
        .map(|c| FlatTree::new(&c.tree))
        .collect();
    let mut cx = FileLowerer {
        parsed,
        text: parsed.parse_text(),
        file,
        units: IdVec::new(),
        diagnostics: Vec::new(),
    };
    for (chunk, flat) in parsed.chunks.iter().zip(&flats) {
        let root = chunk.tree.root_node();
        let first = cx.units.next_id();
        for child in flat.root().named_children() {
            cx.top_level(child);
        }
        let range = chunk.span.range;
        let chunk_text = cx
            .text
            .get(range.start as usize..range.end as usize)
            .unwrap_or("");
        if has_directive_marker(chunk_text) {
            cx.attach_directives(root, first);
        }
    }
    LoweredFile {
        file,
        units: cx.units,
        diagnostics: cx.diagnostics,
        contained_in: None,
    }
}

pub(crate) struct FileLowerer<'a> {
    parsed: &'a ParsedFile,
    text: &'a str,
    file: FileId,
    units: IdVec<UnitId, Unit>,
    diagnostics: Vec<Diagnostic>,
}

const DIRECTIVES_QUERY: &str = dfort_syntax::queries::DIRECTIVES;

fn directives_query() -> Option<&'static Query> {
    static Q: OnceLock<Option<Query>> = OnceLock::new();
    Q.get_or_init(|| Query::new(&tree_sitter_fortran_language(), DIRECTIVES_QUERY).ok())
        .as_ref()
}

pub(crate) fn tree_sitter_fortran_language() -> dfort_syntax::tree_sitter::Language {
    dfort_syntax::language()
}

impl<'a> FileLowerer<'a> {
    pub(crate) fn text(&self, n: FNode) -> &'a str {
        self.text.get(n.start_byte()..n.end_byte()).unwrap_or("")
    }
    pub(crate) fn span(&self, n: FNode) -> Span {
        Span {
            file: self.file,
            range: self.parsed.to_original(n.start_byte(), n.end_byte()),
        }
    }
    fn node_span(&self, n: Node) -> Span {
        Span {
            file: self.file,
            range: self.parsed.node_range(n),
        }
    }
    /// Span of a node without its trailing newline (statement nodes include it).
    pub(crate) fn stmt_span(&self, n: FNode) -> Span {
        let t = self.text(n);
        let trimmed = t.trim_end_matches(['\n', '\r', ' ', '\t']).len();
        Span {
            file: self.file,
            range: self
                .parsed
                .to_original(n.start_byte(), n.start_byte() + trimmed),
        }
    }
    /// Reports a diagnostic of `rule` (with the rule's severity).
    pub(crate) fn report(&mut self, rule: &'static Rule, span: Span, msg: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::new(rule, span.range, msg));
    }

    fn top_level(&mut self, n: FNode<'a>) {
        match n.kind() {
            "program" | "subroutine" | "function" | "module" | "block_data" => {
                self.unit(n, None);
            }
            "ERROR" => {
                self.recovered_unit(n);
            }
            "comment" => {}
            "submodule" => {
                let s = self.stmt_span(n);
                self.report(&UNSUPPORTED, s, "dfort does not support submodules");
            }
            "interface" => {}
            other => {
                if !n.is_missing() {
                    let s = self.stmt_span(n);
                    self.report(
                        &UNSUPPORTED,
                        s,
                        format!(
                            "dfort does not support `{}` outside a program unit",
                            other.replace('_', " ")
                        ),
                    );
                }
            }
        }
    }

    /// A procedure the parser could not close (an `end if` deleted while
    /// typing): tree-sitter leaves its header and statements in an ERROR
    /// node. Its header and leading specification statements are lowered
    /// and its executable statements left out, with a warning, so that
    /// the rest of the program keeps resolving its name and arguments
    /// while the user types. (The syntax error stays an error: nothing is
    /// differentiated through it.)
    fn recovered_unit(&mut self, n: FNode<'a>) {
        let mut items = n.named_children().filter(|c| c.kind() != "comment");
        let Some(first) = items.next() else {
            return;
        };
        let kind = match first.kind() {
            "subroutine_statement" => UnitKind::Subroutine,
            "function_statement" => UnitKind::Function,
            _ => return,
        };
        let id = self.units.next_id();
        let unit = {
            let mut ul = UnitLowerer::new(self, kind, n, None, id);
            ul.header(first);
            for c in items {
                if c.is_missing() || c.kind() == "ERROR" || !ul.specification(c) {
                    break;
                }
            }
            ul.finish()
        };
        self.report(
            &INCOMPLETE_UNIT,
            unit.name_span,
            format!(
                "{} `{}` does not parse to its end: its statements are left out of the analyses until the syntax errors are fixed",
                kind.as_str(),
                unit.name
            ),
        );
        self.units.push(unit);
    }

    /// Lowers a unit node and the procedures it contains; returns its id.
    fn unit(&mut self, n: FNode<'a>, parent: Option<UnitId>) -> UnitId {
        let kind = match n.kind() {
            "program" => UnitKind::Program,
            "subroutine" => UnitKind::Subroutine,
            "function" => UnitKind::Function,
            "module" => UnitKind::Module,
            _ => UnitKind::BlockData,
        };
        let id = self.units.next_id();
        let (unit, contained) = {
            let mut ul = UnitLowerer::new(self, kind, n, parent, id);
            let contained = ul.lower_body(n);
            (ul.finish(), contained)
        };
        self.units.push(unit);
        if let Some(p) = parent {
            self.units[p].children.push(id);
        }
        for c in contained {
            self.unit(c, Some(id));
        }
        id
    }

    /// Attaches each `!$ad` directive comment to the innermost unit (of
    /// those lowered from this chunk, from `first` on) that contains it.
    fn attach_directives(&mut self, root: Node<'a>, first: UnitId) {
        let Some(query) = directives_query() else {
            return;
        };
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, root, self.text.as_bytes());
        let mut found = Vec::new();
        while let Some(m) = matches.next() {
            for cap in m.captures {
                let t = self
                    .text
                    .get(cap.node.start_byte()..cap.node.end_byte())
                    .unwrap_or("");
                let Some(d) = ad_directives::parse(t, false) else {
                    continue;
                };
                let span = self.node_span(cap.node);
                match d.reading() {
                    Reading::Role | Reading::Checkpoint => found.push((span, (d.name, d.args))),
                    Reading::Ignored(why) => self.report(&IGNORED_DIRECTIVE, span, why),
                    Reading::Silent(_) => {}
                }
            }
        }
        for (span, (name, args)) in found {
            let owner = self
                .units
                .indices()
                .filter(|&i| i >= first)
                .filter(|&i| self.units[i].span.range.covers(span.range))
                .min_by_key(|&i| self.units[i].span.range.len());
            match owner {
                Some(i) => self.units[i]
                    .directives
                    .push(Directive { name, args, span }),
                None => self.report(
                    &DIRECTIVE_OUTSIDE_UNIT,
                    span,
                    "`!$ad` directive outside any program unit is ignored",
                ),
            }
        }
    }
}

/// Cheap pre-check before running the directives query over a chunk:
/// a `$ad` or `$openad`.
fn has_directive_marker(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'$' && {
            let rest = &b[i + 1..];
            let starts =
                |p: &[u8]| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p);
            starts(b"ad") || starts(b"openad")
        }
    })
}

/// State while lowering one unit.
pub(crate) struct UnitLowerer<'f, 'a> {
    pub(crate) fx: &'f mut FileLowerer<'a>,
    pub(crate) unit: Unit,
    pub(crate) names: HashMap<String, SymbolId>,
    /// Defined labels → statement (first definition).
    pub(crate) labels: HashMap<u32, StmtId>,
    /// Labels defined by FORMAT statements (valid only as format refs).
    pub(crate) format_labels: Vec<u32>,
    pub(crate) label_refs: Vec<(u32, Span)>,
    /// Where the label of the statement being lowered is written.
    pub(crate) label_span: Option<Span>,
    pub(crate) seen_executable: bool,
    /// Statements a lowered statement adds after itself (a FORALL's loop
    /// nests after the first).
    pub(crate) following: Vec<StmtId>,
    /// How many array constructors enclose the expression being lowered.
    pub(crate) ctor_depth: u32,
}

impl<'f, 'a> UnitLowerer<'f, 'a> {
    fn new(
        fx: &'f mut FileLowerer<'a>,
        kind: UnitKind,
        n: FNode,
        parent: Option<UnitId>,
        id: UnitId,
    ) -> Self {
        let span = fx.stmt_span(n);
        let unit = Unit {
            id,
            name: String::new(),
            kind,
            span,
            name_span: span,
            parent,
            children: Vec::new(),
            recursive: false,
            elemental: false,
            pure: false,
            args: Vec::new(),
            result: None,
            symbols: Default::default(),
            implicit: ImplicitRules::default(),
            uses: Vec::new(),
            commons: Vec::new(),
            equivalences: Vec::new(),
            equivalence_text: Vec::new(),
            aliases: Vec::new(),
            stmt_functions: Vec::new(),
            stmts: Default::default(),
            body: Vec::new(),
            cfg: Default::default(),
            directives: Vec::new(),
            interface_blocks: Vec::new(),
            types: Vec::new(),
            formats: Vec::new(),
            data: Vec::new(),
            namelists: Vec::new(),
            entries: Vec::new(),
        };
        UnitLowerer {
            fx,
            unit,
            names: HashMap::new(),
            labels: HashMap::new(),
            format_labels: Vec::new(),
            label_refs: Vec::new(),
            label_span: None,
            seen_executable: false,
            following: Vec::new(),
            ctor_depth: 0,
        }
    }

    pub(crate) fn text(&self, n: FNode) -> &'a str {
        self.fx.text(n)
    }
    pub(crate) fn span(&self, n: FNode) -> Span {
        self.fx.span(n)
    }
    pub(crate) fn stmt_span(&self, n: FNode) -> Span {
        self.fx.stmt_span(n)
    }
    /// A name or other single token, lower case, joined across
    /// continuation lines (`&` and the blanks around the line break).
    pub(crate) fn lname(&self, n: FNode) -> String {
        token_text(self.text(n))
    }

    /// The symbol for `name`, created (undeclared) on first sight.
    pub(crate) fn symbol(&mut self, name: &str, span: Span) -> SymbolId {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.unit.symbols.push(Symbol::local(
            name.to_string(),
            Type::none(),
            Typing::Unknown,
            false,
            span,
        ));
        self.names.insert(name.to_string(), id);
        id
    }

    pub(crate) fn sym_mut(&mut self, id: SymbolId) -> &mut Symbol {
        &mut self.unit.symbols[id]
    }

    pub(crate) fn push_stmt(&mut self, label: Option<u32>, span: Span, kind: StmtKind) -> StmtId {
        let id = self.unit.stmts.next_id();
        self.unit.stmts.push(Stmt {
            id,
            label,
            span,
            kind,
        });
        if let Some(l) = label {
            self.define_label(l, id, span);
        }
        id
    }

    pub(crate) fn define_label(&mut self, label: u32, id: StmtId, span: Span) {
        let span = self.label_span.take().unwrap_or(span);
        if self.labels.contains_key(&label) || self.format_labels.contains(&label) {
            self.fx.report(
                &DUPLICATE_LABEL,
                span,
                format!("label {label} is already defined in this unit"),
            );
        } else {
            self.labels.insert(label, id);
        }
    }

    pub(crate) fn unsupported(&mut self, label: Option<u32>, n: FNode, what: &str) -> StmtId {
        let span = self.stmt_span(n);
        self.fx
            .report(&UNSUPPORTED, span, format!("dfort does not support {what}"));
        self.push_stmt(
            label,
            span,
            StmtKind::Unsupported {
                construct: what.to_string(),
            },
        )
    }

    /// `ENTRY name(args)`: read, and kept as a statement the derivatives
    /// refuse (as they refuse calls to the entry, `Unit::entries`).
    pub(crate) fn entry(&mut self, label: Option<u32>, n: FNode) -> StmtId {
        let name = field(n, "name").map(|k| self.lname(k)).unwrap_or_default();
        let span = self.stmt_span(n);
        self.unit.entries.push(name.clone());
        self.push_stmt(
            label,
            span,
            StmtKind::Unsupported {
                construct: format!("ENTRY `{name}`"),
            },
        )
    }

    /// Header, specification and execution part; returns the contained
    /// procedure nodes (lowered afterwards as children).
    fn lower_body(&mut self, n: FNode<'a>) -> Vec<FNode<'a>> {
        let mut contained = Vec::new();
        let mut items: Vec<FNode<'a>> = Vec::new();
        let children: Vec<FNode<'a>> = n.named_children().collect();
        let mut header_seen = false;
        for c in children {
            match c.kind() {
                "subroutine_statement"
                | "function_statement"
                | "program_statement"
                | "module_statement"
                | "block_data_statement" => {
                    self.header(c);
                    header_seen = true;
                }
                "internal_procedures" => {
                    for p in c.named_children() {
                        if matches!(p.kind(), "subroutine" | "function") {
                            contained.push(p);
                        }
                    }
                }
                "end_subroutine_statement"
                | "end_function_statement"
                | "end_program_statement"
                | "end_module_statement"
                | "end_block_data_statement" => {}
                _ => items.push(c),
            }
        }
        if !header_seen {
            // A main program without a PROGRAM statement (Fortran 77).
            self.unit.name = "main".to_string();
            if let Some(f) = items.first() {
                self.unit.name_span = self.stmt_span(*f);
            }
        }
        let body = self.block(&items);
        self.unit.body = body;
        contained
    }

    fn finish(mut self) -> Unit {
        for (label, span) in std::mem::take(&mut self.label_refs) {
            if !self.labels.contains_key(&label) && !self.format_labels.contains(&label) {
                self.fx.report(
                    &UNDEFINED_LABEL,
                    span,
                    format!("label {label} is not defined in this unit"),
                );
            }
        }
        self.unit.cfg = std::sync::Arc::new(Cfg::build(&self.unit));
        // The unit lives as long as its chunk: no spare capacity.
        self.unit.stmts.shrink_to_fit();
        self.unit.symbols.shrink_to_fit();
        self.unit
    }
}

/// A token's text with continuation marks and blanks removed, lower case.
pub(crate) fn token_text(t: &str) -> String {
    let t = t.trim();
    if t.contains(['&', '\n']) {
        t.chars()
            .filter(|c| !c.is_whitespace() && *c != '&')
            .map(|c| c.to_ascii_lowercase())
            .collect()
    } else {
        t.to_ascii_lowercase()
    }
}

/// A label's numeric value (`"0010"` → 10).
pub(crate) fn label_value(text: &str) -> Option<u32> {
    let t = text.trim();
    if t.is_empty() || t.len() > 5 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// The grammar fields the lowering reads; their ids are looked up once.
const FIELDS: [&str; 14] = [
    "left",
    "right",
    "name",
    "parameters",
    "type",
    "kind",
    "attribute",
    "declarator",
    "operator",
    "argument",
    "subroutine",
    "value",
    "do_label",
    "allocation",
];

fn field_id(name: &'static str) -> u16 {
    static IDS: OnceLock<[u16; FIELDS.len()]> = OnceLock::new();
    let ids = IDS.get_or_init(|| FIELDS.map(flat_field_id));
    match FIELDS.iter().position(|f| *f == name) {
        Some(i) => ids[i],
        None => flat_field_id(name),
    }
}

/// The child in field `name`.
pub(crate) fn field<'t>(n: FNode<'t>, name: &'static str) -> Option<FNode<'t>> {
    n.child_by_field_id(field_id(name))
}

/// All children in field `name`.
pub(crate) fn fields<'t>(n: FNode<'t>, name: &'static str) -> Vec<FNode<'t>> {
    n.children_by_field_id(field_id(name)).collect()
}

pub(crate) fn named_children<'t>(n: FNode<'t>) -> Vec<FNode<'t>> {
    n.named_children().collect()
}

pub(crate) fn children<'t>(n: FNode<'t>) -> Vec<FNode<'t>> {
    n.children().collect()
}

#[cfg(test)]
mod tests {
    use super::{directives_query, has_directive_marker};

    #[test]
    fn the_directives_query_compiles_against_the_grammar() {
        let q = directives_query().expect("grammar-queries/directives.scm compiles");
        assert_eq!(q.capture_names(), &["directive"]);
        assert!(has_directive_marker("x\n!$AD independent(x)"));
        assert!(has_directive_marker("x\n!$OpenAD independent(x)"));
        assert!(!has_directive_marker("x = 1 ! $ a d"));
        assert!(!has_directive_marker("x = 1 ! $open"));
    }
}
