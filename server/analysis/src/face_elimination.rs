//! Face elimination on the directed line graph of a local computational
//! graph (paper 004, "Elimination Methods", after Naumann's ElimTechMP):
//! every G-edge is a line-graph vertex carrying its label, every pair of
//! adjacent G-edges a line-graph edge (a *face*), and eliminating the
//! face `(i, j)` costs exactly one multiplication: `c_k += c_j · c_i` into
//! the vertex `k` with `i`'s predecessors and `j`'s successors
//! (absorption) or into a new one (fill-in); the face is removed, and `i`
//! and `j` are removed when isolated or merged (`c_i += c_i'`) into a
//! vertex with the same predecessors and successors. A complete sequence
//! leaves one vertex per nonzero of the Jacobian.
//!
//! Contract: [`search`] explores face-elimination sequences exhaustively
//! (A*, one multiplication per step, bounded below by the Jacobian
//! entries no vertex holds yet) on graphs of at most [`FACE_EDGES`]
//! edges, giving up past [`FACE_STATES`] states, and returns a sequence
//! strictly cheaper than the bound it is given, if there is one. Vertex
//! and edge eliminations are groups of face eliminations, so the bound
//! is the best of those. Line-graph vertices are numbered as the
//! accumulation's slots: `0..|E|` the G-edges in `Dag::edges` order,
//! later numbers the fill-ins in the order they are made (at most
//! [`MAX_VERTICES`], so neighbour sets are 128-bit sets); [`Line`]
//! replays a sequence on that numbering. A vertex is known in the
//! search by a signature of the G-paths it sums: the sum of path
//! products it stands for, evaluated at fixed pseudo-random edge values
//! modulo 2^61 − 1 (products multiply, absorptions and merges add), so
//! states reached in different orders meet.

use std::collections::{BTreeSet, BinaryHeap, HashMap};

use crate::elimination::{Dag, Fma};

/// Face elimination is searched on graphs of at most this many edges.
pub const FACE_EDGES: usize = 12;
/// The face search gives up past this many line-graph states.
pub const FACE_STATES: usize = 1_000;
/// Line-graph vertices a sequence may number (edges and fill-ins).
pub const MAX_VERTICES: usize = 128;

/// One vertex of the directed line graph: the G-paths from `from` to
/// `to` whose label products it sums (`sig`, see the module comment),
/// and its neighbours among the other intermediate line vertices. The
/// source (sink) vertex joins it when `from` is an independent (`to` a
/// dependent).
#[derive(Clone, Copy, Debug)]
struct Vertex {
    from: usize,
    to: usize,
    sig: u64,
    preds: u128,
    succs: u128,
}

/// A directed line graph while it is face-eliminated.
#[derive(Clone, Debug)]
pub struct Line {
    n: usize,
    deps: usize,
    vertices: Vec<Option<Vertex>>,
}

const MODULUS: u64 = (1 << 61) - 1;

fn mul_mod(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) % MODULUS as u128) as u64
}

fn add_mod(a: u64, b: u64) -> u64 {
    (a + b) % MODULUS
}

/// A well-mixed hash (splitmix64).
fn path_sig(path: u64) -> u64 {
    let mut z = path.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn bits(mut m: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            k
        })
    })
}

impl Line {
    /// The line graph of `d` (which must have at most 64 vertices and
    /// [`MAX_VERTICES`] edges).
    pub fn of(d: &Dag) -> Line {
        let mut vertices: Vec<Option<Vertex>> = d
            .edges
            .iter()
            .map(|&(i, j)| {
                Some(Vertex {
                    from: i,
                    to: j,
                    sig: 1 + path_sig(((i as u64) << 32) | j as u64) % (MODULUS - 1),
                    preds: 0,
                    succs: 0,
                })
            })
            .collect();
        for (a, &(_, j)) in d.edges.iter().enumerate() {
            for (b, &(k, _)) in d.edges.iter().enumerate() {
                if k == j {
                    if let Some(v) = vertices[a].as_mut() {
                        v.succs |= 1 << b;
                    }
                    if let Some(v) = vertices[b].as_mut() {
                        v.preds |= 1 << a;
                    }
                }
            }
        }
        Line {
            n: d.n,
            deps: d.n + d.p,
            vertices,
        }
    }

    fn get(&self, k: usize) -> Option<&Vertex> {
        self.vertices.get(k).and_then(Option::as_ref)
    }

    /// The faces left: pairs of adjacent intermediate line vertices.
    pub fn faces(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (i, v) in self.vertices.iter().enumerate() {
            if let Some(v) = v {
                out.extend(bits(v.succs).map(|j| (i, j)));
            }
        }
        out
    }

    /// The G-vertices a line vertex spans (`from`, `to`).
    pub fn span(&self, k: usize) -> Option<(usize, usize)> {
        self.get(k).map(|v| (v.from, v.to))
    }

    /// Whether `a` and `b` have the same predecessors and successors,
    /// the source and sink vertices included.
    fn twins(&self, a: &Vertex, b: &Vertex) -> bool {
        let src = |v: &Vertex| (v.from < self.n).then_some(v.from);
        let sink = |v: &Vertex| (v.to >= self.deps).then_some(v.to);
        a.preds == b.preds && a.succs == b.succs && src(a) == src(b) && sink(a) == sink(b)
    }

    fn isolated(&self, v: &Vertex) -> bool {
        (v.preds == 0 && v.from >= self.n) || (v.succs == 0 && v.to < self.deps)
    }

    fn remove(&mut self, k: usize) -> Option<Vertex> {
        let v = self.vertices.get_mut(k)?.take()?;
        for h in bits(v.preds) {
            if let Some(h) = self.vertices[h].as_mut() {
                h.succs &= !(1 << k);
            }
        }
        for s in bits(v.succs) {
            if let Some(s) = self.vertices[s].as_mut() {
                s.preds &= !(1 << k);
            }
        }
        Some(v)
    }

    /// The vertex other than `not` with `v`'s neighbours, if any.
    fn twin_of(&self, v: &Vertex, not: usize) -> Option<usize> {
        self.vertices
            .iter()
            .enumerate()
            .find(|(t, w)| *t != not && w.as_ref().is_some_and(|w| self.twins(v, w)))
            .map(|(t, _)| t)
    }

    /// Step 3 (and 4) of the definition: `k` removed when isolated,
    /// otherwise a twin merged into it.
    fn settle(&mut self, k: usize, fmas: &mut Vec<Fma>) {
        let Some(v) = self.get(k).copied() else {
            return;
        };
        if self.isolated(&v) {
            self.remove(k);
            return;
        }
        if let Some(t) = self.twin_of(&v, k) {
            if let Some(w) = self.remove(t) {
                fmas.push(Fma {
                    target: k,
                    fresh: false,
                    a: t,
                    b: None,
                });
                if let Some(v) = self.vertices[k].as_mut() {
                    v.sig = add_mod(v.sig, w.sig);
                }
            }
        }
    }

    /// Eliminates the face `(i, j)`: the multiply-add (and additions)
    /// it writes; `None` when it is not a face or the numbering is full.
    fn eliminate(&mut self, i: usize, j: usize) -> Option<Vec<Fma>> {
        let (vi, vj) = (*self.get(i)?, *self.get(j)?);
        if vi.succs & (1 << j) == 0 {
            return None;
        }
        // The products of i's paths with j's.
        let sig = mul_mod(vi.sig, vj.sig);
        let shape = Vertex {
            from: vi.from,
            to: vj.to,
            sig,
            preds: vi.preds,
            succs: vj.succs,
        };
        let mut fmas = Vec::new();
        match self.twin_of(&shape, usize::MAX) {
            Some(k) => {
                fmas.push(Fma {
                    target: k,
                    fresh: false,
                    a: j,
                    b: Some(i),
                });
                if let Some(v) = self.vertices[k].as_mut() {
                    v.sig = add_mod(v.sig, sig);
                }
            }
            None => {
                let k = self.vertices.len();
                if k >= MAX_VERTICES {
                    return None;
                }
                fmas.push(Fma {
                    target: k,
                    fresh: true,
                    a: j,
                    b: Some(i),
                });
                for h in bits(shape.preds) {
                    if let Some(h) = self.vertices[h].as_mut() {
                        h.succs |= 1 << k;
                    }
                }
                for s in bits(shape.succs) {
                    if let Some(s) = self.vertices[s].as_mut() {
                        s.preds |= 1 << k;
                    }
                }
                self.vertices.push(Some(shape));
            }
        }
        if let Some(v) = self.vertices[i].as_mut() {
            v.succs &= !(1 << j);
        }
        if let Some(v) = self.vertices[j].as_mut() {
            v.preds &= !(1 << i);
        }
        self.settle(i, &mut fmas);
        self.settle(j, &mut fmas);
        Some(fmas)
    }

    /// The state without its numbering: each vertex by its signature,
    /// with its successors' signatures summed.
    fn key(&self) -> Vec<(u64, u64)> {
        let mut key: Vec<(u64, u64)> = self
            .vertices
            .iter()
            .flatten()
            .map(|v| {
                let succs = bits(v.succs)
                    .filter_map(|k| self.get(k))
                    .fold(0u64, |a, w| a.wrapping_add(path_sig(w.sig)));
                (v.sig, succs)
            })
            .collect();
        key.sort_unstable();
        key
    }

    /// The Jacobian's nonzero entries no vertex holds yet (each step
    /// makes at most one vertex, so at least this many steps are left).
    fn missing(&self, entries: &BTreeSet<(usize, usize)>) -> u64 {
        let held: BTreeSet<(usize, usize)> = self
            .vertices
            .iter()
            .flatten()
            .map(|v| (v.from, v.to))
            .collect();
        entries.difference(&held).count() as u64
    }

    /// The vertices left, by the Jacobian entry each holds (once every
    /// face is eliminated).
    pub fn entries(&self) -> Vec<((usize, usize), usize)> {
        let mut out: Vec<((usize, usize), usize)> = self
            .vertices
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.as_ref().map(|v| ((v.from, v.to), k)))
            .collect();
        out.sort_unstable();
        out
    }

    pub fn slots(&self) -> usize {
        self.vertices.len()
    }
}
/// A face-elimination sequence: the line-graph vertices `(i, j)` of
/// each face, in order.
pub type Faces = Vec<(usize, usize)>;

/// What a bounded search found: `Some((cost, faces))`, or `None` when no
/// sequence is cheaper than the bound.
pub type Found = Option<(u64, Faces)>;

/// A state of the search: its line graph, and the state and face it
/// came from.
type State = (Line, Option<(usize, (usize, usize))>);

/// Replays the face sequence `faces` on `d`: the multiply-adds and
/// additions it writes, the line graph it leaves, and its
/// multiplications. `None` when a step is not a face of the graph then.
pub fn replay(d: &Dag, faces: &[(usize, usize)]) -> Option<(Vec<Fma>, Line, u64)> {
    let mut line = Line::of(d);
    let mut fmas = Vec::new();
    for &(i, j) in faces {
        fmas.extend(line.eliminate(i, j)?);
    }
    let cost = faces.len() as u64;
    Some((fmas, line, cost))
}

/// The cheapest face-elimination sequence of `d` if it costs less than
/// `bound`: `Some(None)` when none does, `None` when the graph is too
/// large or the search gave up.
pub fn search(d: &Dag, bound: u64) -> Option<Found> {
    search_capped(d, bound, FACE_STATES)
}

/// [`search`] giving up past `cap` states.
pub fn search_capped(d: &Dag, bound: u64, cap: usize) -> Option<Found> {
    if d.edges.len() > FACE_EDGES || d.n + d.p + d.m > 64 {
        return None;
    }
    let entries: BTreeSet<(usize, usize)> = crate::elimination::structural_entries(d);
    let start = Line::of(d);
    if start.missing(&entries) >= bound {
        return Some(None);
    }
    // States by number; each with its parent and the face that made it.
    let mut states: Vec<State> = Vec::new();
    let mut dist: HashMap<Vec<(u64, u64)>, u64> = HashMap::new();
    let mut heap = BinaryHeap::new();
    dist.insert(start.key(), 0);
    heap.push(std::cmp::Reverse((start.missing(&entries), 0u64, 0usize)));
    states.push((start, None));
    while let Some(std::cmp::Reverse((_, c, at))) = heap.pop() {
        let faces = states[at].0.faces();
        if faces.is_empty() {
            let mut seq = Vec::new();
            let mut k = at;
            while let Some((parent, face)) = states[k].1 {
                seq.push(face);
                k = parent;
            }
            seq.reverse();
            return Some(Some((c, seq)));
        }
        if dist.get(&states[at].0.key()).is_some_and(|&b| b < c) {
            continue;
        }
        for (i, j) in faces {
            let mut next = states[at].0.clone();
            if next.eliminate(i, j).is_none() {
                continue;
            }
            let cost = c + 1;
            let estimate = cost + next.missing(&entries);
            let key = next.key();
            if estimate < bound && dist.get(&key).is_none_or(|&b| cost < b) {
                if states.len() >= cap {
                    return None;
                }
                dist.insert(key, cost);
                heap.push(std::cmp::Reverse((estimate, cost, states.len())));
                states.push((next, Some((at, (i, j)))));
            }
        }
    }
    Some(None)
}

/// The multiplications `faces` costs on `d` and the Jacobian entries
/// left, as `elimination::cost_of` gives them for vertex and edge steps.
pub fn cost_of(d: &Dag, faces: &[(usize, usize)]) -> Option<(u64, usize)> {
    replay(d, faces).map(|(_, line, cost)| (cost, line.entries().len()))
}

/// The G-vertices each face of `faces` joins: `(from, through, to)`.
pub fn spans(d: &Dag, faces: &[(usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut line = Line::of(d);
    let mut out = Vec::new();
    for &(i, j) in faces {
        if let (Some((a, b)), Some((_, c))) = (line.span(i), line.span(j)) {
            out.push((a, b, c));
        }
        if line.eliminate(i, j).is_none() {
            break;
        }
    }
    out
}
