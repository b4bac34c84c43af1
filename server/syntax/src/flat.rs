//! A flattened copy of a tree-sitter tree for fast repeated traversal.
//!
//! Lowering asks each node for its children and fields several times;
//! through tree-sitter's API every such question walks the hidden nodes of
//! the grammar again and allocates a cursor. One depth-first walk into an
//! array of plain records makes every later question an index lookup.

use crate::diagnostic::TextRange;
use std::sync::OnceLock;
use tree_sitter::{Language, Node, Tree};

const NONE: u32 = u32::MAX;
const NAMED: u8 = 1;
const MISSING: u8 = 2;
/// tree-sitter's symbol id for ERROR nodes.
const ERROR_KIND: u16 = u16::MAX;

#[derive(Clone, Copy, Debug)]
struct Record {
    kind: u16,
    field: u16,
    flags: u8,
    start: u32,
    end: u32,
    parent: u32,
    first_child: u32,
    next_sibling: u32,
}

/// The visible nodes of a tree (named and anonymous), in document order.
pub struct FlatTree {
    nodes: Vec<Record>,
}

struct Names {
    kinds: Vec<String>,
    named: Vec<bool>,
    fields: Vec<String>,
}

fn names() -> &'static Names {
    static N: OnceLock<Names> = OnceLock::new();
    N.get_or_init(|| {
        let lang: Language = crate::language();
        let kinds = (0..lang.node_kind_count() as u16)
            .map(|id| lang.node_kind_for_id(id).unwrap_or("").to_string())
            .collect();
        let named = (0..lang.node_kind_count() as u16)
            .map(|id| lang.node_kind_is_named(id))
            .collect();
        let fields = (0..=lang.field_count() as u16)
            .map(|id| lang.field_name_for_id(id).unwrap_or("").to_string())
            .collect();
        Names {
            kinds,
            named,
            fields,
        }
    })
}

/// The id of a field name (0 when the grammar has no such field).
pub fn field_id(name: &str) -> u16 {
    names()
        .fields
        .iter()
        .position(|f| *f == name)
        .map_or(0, |i| i as u16)
}

impl FlatTree {
    pub fn new(tree: &Tree) -> FlatTree {
        FlatTree::from_node(tree.root_node())
    }

    pub fn from_node(root: Node) -> FlatTree {
        let names = names();
        let mut nodes: Vec<Record> = Vec::with_capacity(root.descendant_count());
        let mut cursor = root.walk();
        // Index of the last child appended under each open ancestor.
        let mut last_child: Vec<u32> = Vec::new();
        let mut parents: Vec<u32> = Vec::new();
        loop {
            // Few calls into tree-sitter per node: this walk is the
            // dominant cost of lowering.
            let n = cursor.node();
            let idx = nodes.len() as u32;
            let kind = n.kind_id();
            let (start, end) = (n.start_byte() as u32, n.end_byte() as u32);
            let mut flags = 0;
            if kind == ERROR_KIND || names.named.get(kind as usize).copied().unwrap_or(false) {
                flags |= NAMED;
            }
            // Only zero-width nodes can be MISSING.
            if start == end && n.is_missing() {
                flags |= MISSING;
            }
            let parent = parents.last().copied().unwrap_or(NONE);
            nodes.push(Record {
                kind,
                field: cursor.field_id().map_or(0, |f| f.get()),
                flags,
                start,
                end,
                parent,
                first_child: NONE,
                next_sibling: NONE,
            });
            if parent != NONE {
                match last_child.last_mut() {
                    Some(prev) if *prev != NONE => {
                        nodes[*prev as usize].next_sibling = idx;
                        *prev = idx;
                    }
                    Some(prev) => {
                        nodes[parent as usize].first_child = idx;
                        *prev = idx;
                    }
                    None => {}
                }
            }
            if cursor.goto_first_child() {
                parents.push(idx);
                last_child.push(NONE);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return FlatTree { nodes };
                }
                parents.pop();
                last_child.pop();
            }
        }
    }

    pub fn root(&self) -> FNode<'_> {
        FNode { tree: self, idx: 0 }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// A node of a [`FlatTree`], with the parts of tree-sitter's `Node` API the
/// lowering uses.
#[derive(Clone, Copy)]
pub struct FNode<'t> {
    tree: &'t FlatTree,
    idx: u32,
}

impl std::fmt::Debug for FNode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} [{}..{}]",
            self.kind(),
            self.start_byte(),
            self.end_byte()
        )
    }
}

impl<'t> FNode<'t> {
    fn rec(&self) -> &'t Record {
        &self.tree.nodes[self.idx as usize]
    }
    fn at(&self, idx: u32) -> Option<FNode<'t>> {
        (idx != NONE).then_some(FNode {
            tree: self.tree,
            idx,
        })
    }
    pub fn kind(&self) -> &'static str {
        let k = self.rec().kind;
        if k == ERROR_KIND {
            return "ERROR";
        }
        names().kinds.get(k as usize).map_or("", String::as_str)
    }
    pub fn is_named(&self) -> bool {
        self.rec().flags & NAMED != 0
    }
    pub fn is_missing(&self) -> bool {
        self.rec().flags & MISSING != 0
    }
    pub fn is_error(&self) -> bool {
        self.rec().kind == ERROR_KIND
    }
    pub fn start_byte(&self) -> usize {
        self.rec().start as usize
    }
    pub fn end_byte(&self) -> usize {
        self.rec().end as usize
    }
    pub fn range(&self) -> TextRange {
        TextRange::new(self.rec().start, self.rec().end)
    }
    pub fn parent(&self) -> Option<FNode<'t>> {
        self.at(self.rec().parent)
    }
    /// The field this node fills in its parent, if any.
    pub fn field_name(&self) -> Option<&'static str> {
        let f = self.rec().field;
        (f != 0).then(|| names().fields.get(f as usize).map_or("", String::as_str))
    }
    pub fn children(&self) -> Children<'t> {
        Children {
            tree: self.tree,
            next: self.rec().first_child,
        }
    }
    pub fn named_children(&self) -> impl Iterator<Item = FNode<'t>> {
        self.children().filter(|c| c.is_named())
    }
    pub fn child_count(&self) -> usize {
        self.children().count()
    }
    /// The first child in field `id` (see [`field_id`]).
    pub fn child_by_field_id(&self, id: u16) -> Option<FNode<'t>> {
        if id == 0 {
            return None;
        }
        self.children().find(|c| c.rec().field == id)
    }
    pub fn children_by_field_id(&self, id: u16) -> impl Iterator<Item = FNode<'t>> {
        self.children()
            .filter(move |c| id != 0 && c.rec().field == id)
    }
}

pub struct Children<'t> {
    tree: &'t FlatTree,
    next: u32,
}

impl<'t> Iterator for Children<'t> {
    type Item = FNode<'t>;
    fn next(&mut self) -> Option<FNode<'t>> {
        if self.next == NONE {
            return None;
        }
        let n = FNode {
            tree: self.tree,
            idx: self.next,
        };
        self.next = self.tree.nodes[self.next as usize].next_sibling;
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat copy has the same shape, kinds, fields and ranges as the
    /// tree-sitter tree.
    #[test]
    fn matches_the_tree_sitter_tree() {
        let src = "subroutine s(x)\n  real :: x(3)\n  if (x(1) > 0) then\n    x = -x ! c\n  end if\n  y = = 2\nend\n";
        let mut p = tree_sitter::Parser::new();
        p.set_language(&crate::language()).unwrap();
        let tree = p.parse(src, None).unwrap();
        let flat = FlatTree::new(&tree);
        fn compare(a: Node, b: FNode) {
            assert_eq!(a.kind(), b.kind());
            assert_eq!(
                (a.start_byte(), a.end_byte()),
                (b.start_byte(), b.end_byte())
            );
            assert_eq!(a.is_named(), b.is_named());
            assert_eq!(a.is_error(), b.is_error());
            assert_eq!(a.is_missing(), b.is_missing());
            let mut c = a.walk();
            let ak: Vec<Node> = a.children(&mut c).collect();
            let bk: Vec<FNode> = b.children().collect();
            assert_eq!(ak.len(), bk.len(), "children of {}", a.kind());
            for (i, (x, y)) in ak.iter().zip(&bk).enumerate() {
                assert_eq!(a.field_name_for_child(i as u32), y.field_name());
                assert_eq!(y.parent().map(|p| p.idx), Some(b.idx));
                compare(*x, *y);
            }
        }
        compare(tree.root_node(), flat.root());
        assert_eq!(flat.len(), tree.root_node().descendant_count());
        let left = field_id("left");
        assert_ne!(left, 0);
        assert_eq!(field_id("no such field"), 0);
    }
}
