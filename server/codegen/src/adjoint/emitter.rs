//! What writing one adjoint routine accumulates: the forward sweep's
//! text, the reverse sweeps of basic blocks, the temporaries and counters
//! the routine declares, the derivative modules and routines it uses, the
//! refusals and the trace of what the code does — and where the statement
//! being written sits (enclosing loops, what is varied before it).
//!
//! Contract: only the generator's own state lives here; what the analyses
//! decided is [`super::inputs`]'. A refusal means the routine is not
//! written: its text is dropped and the refusals are returned instead.

use super::sweep::Line;
use crate::fortran::Writer;
use crate::trace::RoutineTrace;
use crate::Refusal;
use dfort_analysis::dep::GlobalKey;
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::NodeId;
use dfort_ir::{Span, SymbolId, UnitId};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A construct the adjoint generator refuses, with where it is.
pub(super) fn refusal(span: Span, reason: impl Into<crate::Reason>) -> Refusal {
    Refusal::new(span, reason)
}

pub(super) struct Emitter {
    /// The forward sweep.
    pub fwd: Writer,
    pub refusals: Vec<Refusal>,
    /// What the code written so far does ([`crate::trace`]).
    pub trace: RoutineTrace,
    /// Loops seen so far (each gets its own counter variables).
    pub counters: usize,
    /// The loops whose trips the forward sweep counts (`dfort_count<n>`,
    /// a DO WHILE loop's trip count; the others' counter is not set).
    pub trip_counts: Vec<usize>,
    /// How many DO loops enclose the statement being generated.
    pub loop_depth: usize,
    /// Indices of the enclosing counted loops the reverse sweep replays.
    pub replayed: Vec<SymbolId>,
    /// The variables varied just before the statement being reversed.
    pub varied: BitSet,
    /// The temporaries of its hoisted function references whose results
    /// TBR found not varied ([`dfort_analysis::tbr::Tbr::passive_references`]).
    pub passive_temps: BitSet,
    /// Scalar temporaries `dfort_z<n>` (their types) passed as
    /// derivatives of values or in place of unread actuals.
    pub ztemps: Vec<String>,
    /// The types of the recovery plans' temporaries `dfort_i<n>`.
    pub int_temps: Vec<String>,
    /// Whether `dfort_j` (the column index of matrix adjoints, the element
    /// index of `product`'s adjoint) is used.
    pub column_loops: bool,
    /// Whether `dfort_entry_depth` (the tape's depth when a root whose
    /// independents take their values after a call starts) is used.
    pub entry_depth: bool,
    /// Ranks of the array temporaries of array assignments.
    pub array_temps: BTreeSet<usize>,
    /// Ranks of the adjoints of scalar actuals of elemental functions
    /// applied to arrays (`dfort_te<k>`, [`Emitter::elemental_temp`]).
    pub elemental_temps: Vec<usize>,
    /// Derivative modules (`m_b`) of the callees this routine calls.
    pub used_modules: BTreeSet<String>,
    /// The units whose adjoint routines this routine calls.
    pub called: BTreeSet<UnitId>,
    /// Module variables callees read that the unit does not see, brought
    /// in as `use m, only: local => name` to be saved around calls:
    /// (local name, module, name in the module).
    pub hidden: BTreeMap<GlobalKey, (String, String, String)>,
    /// COMMON blocks callees read that the unit does not declare,
    /// declared whole under new names to save members around calls:
    /// block → (member names, declaration lines).
    pub hidden_commons: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// In unstructured units, per basic block (CFG node): its reverse
    /// sweep.
    pub block_rev: HashMap<NodeId, Vec<Line>>,
    /// The ranks of the WHERE masks `dfort_w<n>` (logical arrays).
    pub masks: Vec<usize>,
    /// The mask of the WHERE arm holding the statement being written.
    pub mask: Option<String>,
    /// Whether the constructor adjoint's `dfort_tc` and `dfort_p` are
    /// used, and whether one is being written.
    pub ctor_temps: bool,
    pub ctor_seed: bool,
    /// The most adjoint sums one reversed loop splits into partial sums
    /// (`dfort_s<a>_<p>`, [`super::sweep`]).
    pub partial_sums: usize,
    /// The numbers of the loops checkpointed with a binomial schedule
    /// (their integers `dfort_clo<c>`, … and plan `dfort_plan<c>`).
    pub binomials: Vec<usize>,
    /// Whether the assignment being written keeps only its restores (a
    /// preaccumulated graph's, [`super::preaccumulate`]).
    pub restore_only: bool,
    /// How many `dfort_pa` slots the preaccumulated graphs use.
    pub pa_slots: usize,
    /// The adjoint multipliers held in `dfort_tb<k>` around the operands
    /// being written (nested), and the most held at once.
    pub shared_depth: usize,
    pub shared_temps: usize,
    /// How many values one statement's partials share at most
    /// (`dfort_v<k>`, [`crate::value_numbering`]).
    pub value_temps: usize,
}

impl Emitter {
    pub fn new(unit: UnitId, unstructured: bool) -> Emitter {
        Emitter {
            fwd: Writer::default(),
            refusals: Vec::new(),
            trace: RoutineTrace::new(unit, unstructured),
            counters: 0,
            trip_counts: Vec::new(),
            loop_depth: 0,
            replayed: Vec::new(),
            varied: BitSet::default(),
            passive_temps: BitSet::default(),
            ztemps: Vec::new(),
            int_temps: Vec::new(),
            column_loops: false,
            entry_depth: false,
            array_temps: BTreeSet::new(),
            elemental_temps: Vec::new(),
            used_modules: BTreeSet::new(),
            called: BTreeSet::new(),
            hidden: BTreeMap::new(),
            hidden_commons: BTreeMap::new(),
            block_rev: HashMap::new(),
            masks: Vec::new(),
            mask: None,
            ctor_temps: false,
            partial_sums: 0,
            ctor_seed: false,
            binomials: Vec::new(),
            restore_only: false,
            pa_slots: 0,
            shared_depth: 0,
            shared_temps: 0,
            value_temps: 0,
        }
    }

    /// A new WHERE mask `dfort_w<n>` of rank `rank`.
    pub fn mask_temp(&mut self, rank: usize) -> String {
        self.masks.push(rank);
        format!("dfort_w{}", self.masks.len())
    }

    pub fn refuse(&mut self, span: Span, message: impl Into<crate::Reason>) {
        self.refusals.push(refusal(span, message));
    }

    /// A new scalar temporary `dfort_z<n>` of type `ty`.
    pub fn ztemp(&mut self, ty: String) -> String {
        self.ztemps.push(ty);
        format!("dfort_z{}", self.ztemps.len())
    }

    /// A new allocatable `real(8)` array of `rank` (`dfort_te<k>`).
    pub fn elemental_temp(&mut self, rank: usize) -> String {
        self.elemental_temps.push(rank);
        format!("dfort_te{}", self.elemental_temps.len())
    }

    /// `call dfort_push(item)` in the forward sweep.
    pub fn push(&mut self, item: &str) {
        self.fwd.line(&format!("call dfort_push({item})"));
    }

    /// Writes a statement's label (`"10 "`, or empty) on a `continue` of
    /// its own, for lines that cannot carry it, and clears it.
    pub fn flush_label(&mut self, label: &mut String) {
        if !label.is_empty() {
            self.fwd.line(&format!("{label}continue"));
            label.clear();
        }
    }

    /// Forward-sweep lines, the first carrying the statement's label.
    pub fn labelled_lines(&mut self, label: &str, lines: &[String]) {
        for (i, l) in lines.iter().enumerate() {
            let lab = if i == 0 { label } else { "" };
            self.fwd.line(&format!("{lab}{l}"));
        }
    }
}
