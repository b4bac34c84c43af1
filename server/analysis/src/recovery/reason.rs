//! Why a value is stored rather than recovered (paper 003 §3: inversion
//! needs every operation on the path from the operand to the root to be
//! invertible; §4: ambiguous definitions are left to storage).
//!
//! Contract: typed facts only — the blocking operation or the kind of
//! write, with the span it sits at. The sentences people read are the
//! ide crate's renderer's (`dfort_ide::render`), which the editor and the
//! command line share; nothing here is meant to be printed as is.

use dfort_ir::{Span, SymbolId};

/// An operation that prevents recovering a value by inversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NonInvertible {
    /// `.not.`: the operand is logical, not an address.
    LogicalNegation,
    /// `a * b` where neither factor is a non-zero constant.
    ProductOfVariables,
    /// `a / b` on integers (§3's example of a non-invertible operation).
    IntegerDivision,
    /// `a ** b`.
    Power,
    /// A relational or logical operator.
    ComparisonOrLogical,
    /// `mod` or `modulo`.
    Modulo,
    /// Another intrinsic function (`max`, `min`, `abs`…), by name.
    Intrinsic(String),
    /// An element of this array: the value goes through an indirection.
    Indirection(SymbolId),
    /// An assignment that does not read the variable it sets (units with
    /// jumps, [`crate::undo`]).
    NotRead,
    /// An expression that reads the variable it sets more than once.
    ReadTwice,
    /// The variable sits in a function reference's arguments.
    FunctionReference,
    /// An operation with no inverse that is none of the above.
    NoInverse,
    /// Another operand of the assignment may differ in the reverse sweep.
    UnrestorableOperand,
}

/// Why a value cannot be recovered by inversion: the operation and
/// where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocker {
    pub op: NonInvertible,
    pub span: Span,
}

/// Why the game (or, in a unit with jumps, the undo of assignments) does
/// not follow an address variable's writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ambiguity {
    /// Assigned inside a branch or a loop nested in the planned loop.
    InBranchOrNestedLoop,
    /// The index of a DO loop (`nested`: nested in the planned loop).
    LoopIndex { nested: bool },
    /// An actual argument of a CALL the callee may modify.
    SetByCall,
    /// Set by a READ statement.
    SetByRead,
    /// An argument of a function reference (functions may modify them).
    SetByFunctionReference,
    /// Assigned in part (a substring or a component), or allocated.
    AssignedInPart,
    /// Equivalenced with another variable.
    Equivalenced,
    /// Read by a nested loop checkpointed with `binomial-ckp`, whose
    /// snapshot restores it in the reverse sweep.
    RestoredByCheckpoint,
}

/// An address or control variable the game leaves to TBR's recording.
#[derive(Clone, Debug)]
pub struct Ambiguous {
    pub var: SymbolId,
    pub why: Ambiguity,
    /// The statement (or, for [`Ambiguity::Equivalenced`], the unit's
    /// name) that makes it ambiguous.
    pub span: Span,
}
