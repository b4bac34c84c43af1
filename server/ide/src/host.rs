//! The language server's state: every Fortran file of the workspace (open
//! documents as ropes the editor changes, the others as read from disk),
//! cut into top-level program units ("chunks") that are parsed and lowered
//! one by one and cached by content, and the latest [`Snapshot`] — the
//! linked program with its analyses — that the features read.
//!
//! Contract: an edit costs the reparse and relowering of the chunks whose
//! text changed (the edited chunk's tree is kept and adjusted with
//! `Tree::edit`, so tree-sitter reuses what the edit did not touch), then a
//! relink of all units and, at the first read of the snapshot's analyses
//! ([`Snapshot::analysis`]: what reads only the linked program does not
//! wait for them), a rerun of the interprocedural analyses that
//! recomputes only the units whose inputs changed: when no chunk that
//! others link against changed (modules, hosts of internal procedures,
//! the names and nesting of units), every unit of an unchanged chunk links
//! exactly as before and keeps its analysis results unless a callee's
//! summary or its calling context changed. Each
//! chunk is lowered as a file of its own, so its IR ranges are relative to
//! the chunk's first byte; [`Snapshot`] maps them back to the document.
//! Nothing here panics on any text.

use crate::analysis::{Analysis, Request, RootSpec};
use crate::diagnostics::{self, IdeDiagnostic};
use crate::preprocessing::{CppConfig, PreprocessedDoc};
use dfort_analysis::decisions::Recording;
use dfort_analysis::incremental::Changes;
use dfort_ir::link::{link, relink};
use dfort_ir::lower::{lower_file, LoweredFile};
use dfort_ir::{FileId, IdVec, Program, Span, Storage, SymbolId, Unit, UnitId, UnitKind};
use dfort_syntax::chunks::{split_fine, ChunkRole, ChunkSpan, LineSignature};
use dfort_syntax::fixed_form::normalize_fixed;
use dfort_syntax::line_index::LineIndex;
use dfort_syntax::source_form::{FIXED_EXTENSIONS, FREE_EXTENSIONS};
use dfort_syntax::tree_sitter::{InputEdit, Point, Tree};
use dfort_syntax::{Diagnostic, FixedOptions, FortranParser, SourceForm, TextRange};
use rayon::prelude::*;
use ropey::Rope;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Settings that change what the host computes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    /// Extensions (without dot, compared case-insensitively) read as fixed form.
    pub fixed_extensions: Vec<String>,
    /// Extensions read as free form.
    pub free_extensions: Vec<String>,
    pub fixed: FixedOptions,
    /// Roots asked for by name, with their lists (both empty: directives,
    /// then intents).
    pub roots: Vec<RootSpec>,
    /// Also analyse every other procedure nobody calls (the editor does;
    /// the CLI does when no `--root` is given).
    pub others: bool,
    /// What the adjoint's forward sweep records (the editor shows the
    /// default mode).
    pub recording: Recording,
    /// Whether the adjoint preaccumulates local Jacobians (`dfort.toml`'s
    /// `[adjoint] preaccumulate`, the editor's `dfort.preaccumulate`).
    pub preaccumulate: dfort_analysis::preaccumulation::Preaccumulation,
    /// Read every file in this form, whatever its extension (the command
    /// line's `--fixed` / `--free`).
    pub forced_form: Option<SourceForm>,
    /// Which files the C preprocessor runs on, with which `-I` and `-D`.
    pub cpp: CppConfig,
    /// Subroutines whose adjoint the user supplies (lower case;
    /// [`dfort_analysis::supplied`]).
    pub supplied: Vec<String>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            fixed_extensions: FIXED_EXTENSIONS.iter().map(|s| s.to_string()).collect(),
            free_extensions: FREE_EXTENSIONS.iter().map(|s| s.to_string()).collect(),
            fixed: FixedOptions::default(),
            roots: Vec::new(),
            others: true,
            recording: Recording::Inversion,
            preaccumulate: Default::default(),
            forced_form: None,
            cpp: CppConfig::default(),
            supplied: Vec::new(),
        }
    }
}

impl HostConfig {
    /// What the snapshot's analyses are asked.
    pub fn request(&self) -> Request {
        Request {
            roots: self.roots.clone(),
            others: self.others,
            recording: self.recording,
            preaccumulate: self.preaccumulate,
            supplied: self.supplied.clone(),
        }
    }
}

impl HostConfig {
    /// The source form of `path`, or `None` when it is not Fortran.
    pub fn form_for(&self, path: &Path) -> Option<SourceForm> {
        if let Some(form) = self.forced_form {
            return Some(form);
        }
        let ext = path.extension()?.to_str()?;
        let is = |list: &[String]| {
            list.iter()
                .any(|e| e.trim_start_matches('.').eq_ignore_ascii_case(ext))
        };
        // `.F` (upper case) is fixed form with preprocessing, `.F90` free.
        if is(&self.fixed_extensions) {
            Some(SourceForm::Fixed(self.fixed))
        } else if is(&self.free_extensions) {
            Some(SourceForm::Free)
        } else {
            None
        }
    }
}

/// Drops `value` on a thread kept for that: freeing the last snapshot of
/// a large workspace (its program and every unit's analyses) takes about
/// as long as building the next one did not need to, and nobody waits
/// for it. One thread serves every drop (a thread started per drop
/// returned its memory to the system as it ended, on every edit); when
/// it cannot be started the value is dropped here.
fn drop_elsewhere<T: Send + 'static>(value: Option<T>) {
    type Garbage = Box<dyn Send>;
    static DROPPER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<Garbage>>> =
        std::sync::OnceLock::new();
    let Some(value) = value else {
        return;
    };
    let sender = DROPPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .name("dfort-drop".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| tx)
    });
    // Without the thread (or when it is gone) the value is dropped here.
    if let Some(tx) = sender {
        let _ = tx.send(Box::new(value));
    }
}

/// The signature of line `row` of a rope (empty past the end).
fn line_signature(rope: &Rope, row: usize) -> LineSignature {
    let line = if row < rope.len_lines() {
        rope.line(row).to_string()
    } else {
        String::new()
    };
    LineSignature::of(&line)
}

/// A chunk to parse and lower.
struct ParseJob {
    file: FileId,
    path: PathBuf,
    form: SourceForm,
    text: String,
    old_tree: Option<Tree>,
    /// Keep the tree to reparse the next edit incrementally.
    keep_tree: bool,
}

/// A document's new chunks in order: each reused, or waiting for the
/// parse job at this index.
struct ChunkPlan {
    path: PathBuf,
    slots: Vec<(Chunk, Option<usize>)>,
}

/// One chunk's parse and lowering; shared between snapshots.
struct ChunkData {
    file: FileId,
    /// The tree of a chunk that was edited (kept to reparse the next edit
    /// incrementally); `None` for chunks nobody edits.
    tree: Option<Tree>,
    lowered: LoweredFile,
    /// Syntax and lowering diagnostics, chunk-relative.
    diagnostics: Vec<Diagnostic>,
    /// What other chunks' linking reads of this one ([`link_reads`]),
    /// computed once with the lowering.
    link: LinkReads,
}

/// What a chunk's parse and lowering are a function of: its text, the
/// source form and its role. Compared by content (the hash only finds
/// the candidates), so a reused chunk is always the same text.
#[derive(Clone)]
struct ChunkKey {
    hash: u64,
    /// The chunk's text: a range of `source`, its document's text (or
    /// the preprocessor's output) when the document is not open, else
    /// its own copy.
    source: Arc<str>,
    range: std::ops::Range<usize>,
    form: SourceForm,
    role: ChunkRole,
}

impl ChunkKey {
    /// foldhash: every chunk of an edited document is hashed at each
    /// edit (SipHash was a third of the planning of an edit in a
    /// 20,000-line file).
    fn hash_of(text: &str, form: SourceForm, role: ChunkRole) -> u64 {
        use std::hash::BuildHasher;
        let mut h = foldhash::fast::FixedState::default().build_hasher();
        text.hash(&mut h);
        form.hash(&mut h);
        role.hash(&mut h);
        h.finish()
    }

    /// Whether this key is of that content.
    fn is(&self, hash: u64, text: &str, form: SourceForm, role: ChunkRole) -> bool {
        self.hash == hash && self.form == form && self.role == role && self.text() == text
    }

    fn text(&self) -> &str {
        self.source.get(self.range.clone()).unwrap_or("")
    }
}

#[derive(Clone)]
struct Chunk {
    /// Byte offset of the chunk's start in the document.
    base: u32,
    len: u32,
    key: ChunkKey,
    role: ChunkRole,
    data: Arc<ChunkData>,
}

/// A file the host knows.
pub struct Document {
    pub path: PathBuf,
    /// The text as the editor changes it: kept for open documents, made
    /// from `text` at the first edit of another (a workspace's indexed
    /// files would hold their text twice).
    rope: Option<Rope>,
    pub text: Arc<str>,
    pub lines: Arc<LineIndex>,
    pub form: SourceForm,
    /// Open in the editor (else indexed from disk).
    pub open: bool,
    pub version: i32,
    /// The C preprocessor's output and position map, when it runs on the
    /// document: the chunks are cut from its text.
    pub preprocessed: Option<Arc<PreprocessedDoc>>,
    chunks: Vec<Chunk>,
    /// Edits since the chunks were last brought up to date.
    pending: Vec<InputEdit>,
    /// How the text was last cut into chunks (by line), while edits
    /// since have kept every line's [`LineSignature`] plain and the same:
    /// the next plan reuses it instead of scanning the whole text.
    spans: Option<Arc<Vec<(ChunkSpan, ChunkRole)>>>,
    stale: bool,
}

/// Where a chunk of a snapshot lies.
#[derive(Clone)]
pub struct ChunkPlace {
    /// Its document (shared by the document's chunks).
    pub path: Arc<Path>,
    pub base: u32,
    pub len: u32,
    /// The ids of its units (units are numbered in link order, chunk
    /// after chunk).
    pub units: Range<u32>,
    /// Its parse and lowering, shared with the host.
    data: Arc<ChunkData>,
}

/// A map keyed by chunk: hashed with foldhash, as a snapshot of a large
/// workspace fills one with every chunk on every edit.
pub type ChunkMap<V> = imbl::GenericHashMap<
    FileId,
    V,
    foldhash::fast::RandomState,
    imbl::shared_ptr::DefaultSharedPtr,
>;

/// A snapshot's documents by path: shared with the last snapshot but
/// for the documents that changed.
pub type DocMap = imbl::OrdMap<PathBuf, Arc<DocView>>;

/// A document as a snapshot sees it.
#[derive(Clone)]
pub struct DocView {
    pub path: PathBuf,
    pub text: Arc<str>,
    pub lines: Arc<LineIndex>,
    pub form: SourceForm,
    pub open: bool,
    /// The editor's version of the text.
    pub version: i32,
    /// The chunks' file ids in document order, with their base offsets
    /// (in the preprocessor's output, when it ran).
    pub chunks: Vec<(FileId, u32, u32)>,
    /// The preprocessor's output and position map, when it ran.
    pub preprocessed: Option<Arc<PreprocessedDoc>>,
    /// The ids of its units, in source order (its chunks are consecutive
    /// in link order).
    pub units: Range<u32>,
    /// What linking the other chunks reads of its chunks, in order.
    link: Arc<[LinkItem]>,
}

/// Everything the features read, immutable and shareable across threads.
pub struct Snapshot {
    pub program: Program,
    pub docs: DocMap,
    pub places: ChunkMap<ChunkPlace>,
    /// Link diagnostics (chunk-relative).
    pub link_diagnostics: Vec<(FileId, Diagnostic)>,
    pub config: HostConfig,
    /// The analyses, run at their first read ([`Snapshot::analysis`]):
    /// the program is linked, and what reads only the program (symbols,
    /// references, completion, navigation) answered, before them.
    analysed: OnceLock<Analysed>,
    /// What the analyses start from, until they have run.
    recipe: Mutex<Option<Recipe>>,
}

/// A snapshot's analyses, with the memo of its units' checks.
struct Analysed {
    analysis: Analysis,
    /// Each unit's own checks, once asked for (taken from the last
    /// snapshot where they still hold).
    checks: crate::diagnostics::ChecksMemo,
    took: std::time::Duration,
}

/// How a snapshot's analyses will run: incrementally from the previous
/// snapshot's when `changes` says how the program changed since, else
/// from scratch; the previous snapshot's checks that still hold are
/// carried over either way.
struct Recipe {
    previous: Option<Arc<Snapshot>>,
    changes: Option<Changes>,
    /// How many snapshots before this one have not run their analyses
    /// (each holds the one before it).
    depth: u32,
}

/// A snapshot whose analyses have not run holds the previous one, so
/// snapshots nobody asks about would chain: the one this many back is
/// analysed when the next is built.
const MAX_PENDING: u32 = 4;

impl Snapshot {
    /// The analyses of the program (run at the first call, by the calling
    /// thread; a concurrent caller waits for them).
    pub fn analysis(&self) -> &Analysis {
        &self.analysed().analysis
    }

    /// How long the analyses took, once they have run.
    pub fn analysis_time(&self) -> Option<std::time::Duration> {
        self.analysed.get().map(|a| a.took)
    }

    /// Whether the analyses have run.
    pub fn is_analysed(&self) -> bool {
        self.analysed.get().is_some()
    }

    fn analysed(&self) -> &Analysed {
        self.analysed.get_or_init(|| {
            let started = std::time::Instant::now();
            let recipe = self.recipe.lock().unwrap_or_else(|e| e.into_inner()).take();
            let (previous, changes) = match recipe {
                Some(r) => (r.previous, r.changes),
                None => (None, None),
            };
            let from = previous
                .as_deref()
                .zip(changes.as_ref())
                .map(|(p, c)| (p.analysis(), c));
            let analysis =
                dfort_analysis::facts::analyse(&self.program, &self.config.request(), from);
            // The previous snapshot's checks carry over only if they were
            // computed: its analyses are not run for that.
            let carried_from = previous.as_deref().filter(|p| p.is_analysed());
            let checks = crate::diagnostics::carried_checks(carried_from, &self.program, &analysis);
            // The previous snapshot is let go here (on a thread of its
            // own: freeing a large workspace's takes a while).
            drop_elsewhere(previous);
            Analysed {
                analysis,
                checks,
                took: started.elapsed(),
            }
        })
    }

    /// How many snapshots up to this one have not run their analyses.
    fn pending_depth(&self) -> u32 {
        match self.analysed.get() {
            Some(_) => 0,
            None => self
                .recipe
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or(0, |r| r.depth),
        }
    }

    /// The memo of the units' own checks.
    pub(crate) fn checks(&self) -> &crate::diagnostics::ChecksMemo {
        &self.analysed().checks
    }

    /// The checks of unit `id`'s own statements (computed once per unit
    /// and kept across snapshots while they hold).
    pub fn unit_checks(&self, id: UnitId) -> Option<Arc<crate::diagnostics::UnitChecks>> {
        let compute = || crate::diagnostics::UnitChecks::of(self, id).map(Arc::new);
        match self.program.units.get(id).is_some() {
            true => self.checks().cell(id).get_or_init(compute).clone(),
            false => compute(),
        }
    }

    /// A chunk's syntax and lowering diagnostics (chunk-relative).
    pub fn chunk_diagnostics(&self, file: FileId) -> &[Diagnostic] {
        self.places
            .get(&file)
            .map_or(&[], |p| p.data.diagnostics.as_slice())
    }

    /// A chunk-relative range as a document range.
    /// In a preprocessed document, the range is where the text came from:
    /// the document, or a header it includes (whose path is returned).
    pub fn to_doc(&self, file: FileId, range: TextRange) -> Option<(&Path, TextRange)> {
        let p = self.places.get(&file)?;
        let s = range.start.min(p.len) + p.base;
        let e = range.end.min(p.len).max(range.start.min(p.len)) + p.base;
        let range = TextRange::new(s, e);
        match self
            .docs
            .get(&*p.path)
            .and_then(|d| d.preprocessed.as_ref())
        {
            Some(pp) => {
                let (f, range) = pp.range_to_source(range);
                let path = match f {
                    0 => &*p.path,
                    _ => pp.files.get(f as usize)?.path.as_path(),
                };
                Some((path, range))
            }
            None => Some((&*p.path, range)),
        }
    }

    /// The text and lines of a file positions may map to: a document, or
    /// a header a preprocessed document includes.
    pub fn file_text(&self, path: &Path) -> Option<(&str, &LineIndex)> {
        if let Some(d) = self.docs.get(path) {
            return Some((&d.text, &d.lines));
        }
        self.docs
            .values()
            .filter_map(|d| d.preprocessed.as_ref())
            .flat_map(|pp| pp.headers())
            .find(|(_, f)| f.path == path)
            .map(|(_, f)| (&*f.text, &*f.lines))
    }

    /// The documents that include the header `path` (none for a path that
    /// is not a header of a preprocessed document).
    pub fn includers<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = &'a DocView> + 'a {
        self.docs.values().map(|d| &**d).filter(move |d| {
            d.preprocessed
                .as_ref()
                .is_some_and(|pp| pp.headers().any(|(_, f)| f.path == path))
        })
    }

    /// The chunk holding document offset `offset`, and the chunk-relative
    /// offset (`None` on a line a preprocessor `#if` left out).
    pub fn chunk_at(&self, path: &Path, offset: u32) -> Option<(FileId, u32)> {
        let doc = self.docs.get(path)?;
        let offset = match &doc.preprocessed {
            Some(pp) => pp.from_document(offset)?,
            None => offset,
        };
        let i = doc
            .chunks
            .partition_point(|(_, base, _)| *base <= offset)
            .checked_sub(1)?;
        let (f, base, len) = doc.chunks[i];
        Some((f, (offset - base).min(len)))
    }

    /// Units of the document, in source order.
    pub fn units_of<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = &'a Unit> + 'a {
        let ids = self.docs.get(path).map_or(0..0, |d| d.units.clone());
        self.units_in(ids)
    }

    /// The units with ids in `ids` (those the program has).
    fn units_in(&self, ids: Range<u32>) -> impl Iterator<Item = &Unit> + '_ {
        ids.map_while(move |i| self.program.units.get(UnitId(i)).map(|u| &**u))
    }

    /// The innermost unit containing the document offset.
    pub fn unit_at(&self, path: &Path, offset: u32) -> Option<&Unit> {
        let (file, rel) = self.chunk_at(path, offset)?;
        let ids = self.places.get(&file)?.units.clone();
        self.units_in(ids)
            .filter(|u| u.span.file == file && u.span.range.start <= rel && rel <= u.span.range.end)
            .min_by_key(|u| u.span.range.end - u.span.range.start)
    }

    /// The unit and symbol that `unit`'s symbol `sid` stands for: the
    /// module's, for a name a USE imports; its own otherwise.
    pub fn owner_of<'a>(&'a self, unit: &'a Unit, sid: SymbolId) -> Option<(&'a Unit, SymbolId)> {
        match &unit.symbol(sid).storage {
            Storage::Imported { from, symbol, .. } => {
                Some((&**self.program.units.get(*from)?, *symbol))
            }
            _ => Some((unit, sid)),
        }
    }

    /// All diagnostics of a document, in document offsets, sorted.
    pub fn diagnostics(&self, path: &Path) -> Vec<IdeDiagnostic> {
        diagnostics::of_document(self, path)
    }

    pub fn doc(&self, path: &Path) -> Option<&DocView> {
        self.docs.get(path).map(|d| &**d)
    }

    /// Where a (chunk-relative) span starts: the document, and its line
    /// and character column, both from 1.
    pub fn location(&self, span: Span) -> Option<Location<'_>> {
        let (path, range) = self.to_doc(span.file, span.range)?;
        let (text, lines) = self.file_text(path)?;
        Some(Location {
            path,
            line: lines.line_col(range.start).line + 1,
            col: lines.char_col(text, range.start) + 1,
        })
    }

    /// The 1-based line where a (chunk-relative) span starts in its
    /// document, or in the header it came from (0 when it has no place).
    /// A module cut into chunks is parsed from its head with a synthetic
    /// `end` past the chunk's text: a span starting there (its end) is on
    /// the line of the module's own `end`, the tail chunk.
    pub fn line_of(&self, span: Span) -> u32 {
        let past_chunk = self
            .places
            .get(&span.file)
            .is_some_and(|p| span.range.start > p.len);
        let at = match past_chunk.then(|| self.module_tail(span.file)).flatten() {
            Some(tail) => Span {
                file: tail,
                range: TextRange::new(0, 0),
            },
            None => span,
        };
        self.location(at).map_or(0, |l| l.line)
    }

    /// The chunk of a module's `end` line: the first chunk after the
    /// module's head chunk `head` that holds no unit.
    fn module_tail(&self, head: FileId) -> Option<FileId> {
        let doc = self.docs.get(&*self.places.get(&head)?.path)?;
        let i = doc.chunks.iter().position(|(f, _, _)| *f == head)?;
        doc.chunks[i + 1..]
            .iter()
            .map(|(f, _, _)| *f)
            .find(|f| !self.program.all_units().any(|u| u.span.file == *f))
    }

    /// A document's diagnostic as the command line prints it:
    /// `file:line:col: severity: message [code]`.
    pub fn render_diagnostic(&self, path: &Path, d: &IdeDiagnostic) -> String {
        let (line, col) = self.file_text(path).map_or((0, 0), |(text, lines)| {
            (
                lines.line_col(d.range.start).line + 1,
                lines.char_col(text, d.range.start) + 1,
            )
        });
        format!(
            "{}:{line}:{col}: {}: {} [{}]",
            path.display(),
            d.severity.as_str(),
            d.message,
            d.code
        )
    }
}

/// A place in a document, as the command line prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location<'a> {
    pub path: &'a Path,
    /// From 1.
    pub line: u32,
    /// Characters from 1.
    pub col: u32,
}

/// A file that could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    NotUtf8 {
        path: PathBuf,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io { path, error } => {
                write!(f, "cannot read {}: {}", path.display(), error)
            }
            LoadError::NotUtf8 { path } => write!(
                f,
                "cannot read {}: the file is not valid UTF-8 text",
                path.display()
            ),
        }
    }
}

pub struct Host {
    config: HostConfig,
    docs: BTreeMap<PathBuf, Document>,
    parser: FortranParser,
    next_file: u32,
    snapshot: Option<Arc<Snapshot>>,
    /// The last snapshot built, whose analysis the next one reuses.
    last: Option<Arc<Snapshot>>,
    /// How long the last snapshot's phases took.
    times: BuildTimes,
}

/// How long each phase of the last snapshot took (wall clock).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildTimes {
    /// Preprocessing and cutting the changed documents into chunks.
    pub plan: std::time::Duration,
    /// Parsing and lowering the new chunks.
    pub parse: std::time::Duration,
    /// Linking the program.
    pub link: std::time::Duration,
}

impl std::fmt::Display for BuildTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |d: std::time::Duration| d.as_secs_f64();
        write!(
            f,
            "preprocessing and cutting {:.1} s, parsing and lowering {:.1} s, linking {:.1} s",
            s(self.plan),
            s(self.parse),
            s(self.link)
        )
    }
}

impl Default for Host {
    fn default() -> Self {
        Host::new(HostConfig::default())
    }
}

/// One change of a document: replace `range` (byte offsets of the text
/// before this change; `None` = everything) by `text`.
#[derive(Clone, Debug)]
pub struct TextChange {
    pub range: Option<TextRange>,
    pub text: String,
}

impl Host {
    /// The command line's host: `paths` read from disk (each once, in
    /// the order given), or why a file could not be read.
    pub fn load(paths: &[PathBuf], config: HostConfig) -> (Host, Vec<LoadError>) {
        let mut host = Host::new(config);
        let mut errors = Vec::new();
        for p in paths {
            if host.docs.contains_key(p) {
                continue;
            }
            match std::fs::read(p) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => host.set_text(p, &text, false, 0),
                    Err(_) => errors.push(LoadError::NotUtf8 { path: p.clone() }),
                },
                Err(error) => errors.push(LoadError::Io {
                    path: p.clone(),
                    error,
                }),
            }
        }
        (host, errors)
    }

    /// A host of in-memory files (path, text), as if read from disk:
    /// the tests', benches' and fuzzer's loader.
    pub fn from_sources(sources: Vec<(PathBuf, String)>, config: HostConfig) -> Host {
        let mut host = Host::new(config);
        for (p, text) in sources {
            host.set_text(&p, &text, false, 0);
        }
        host
    }

    pub fn new(config: HostConfig) -> Host {
        Host {
            config,
            docs: BTreeMap::new(),
            parser: FortranParser::new(),
            next_file: 0,
            snapshot: None,
            last: None,
            times: BuildTimes::default(),
        }
    }

    /// How long the last snapshot's phases took.
    pub fn build_times(&self) -> BuildTimes {
        self.times
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// New settings: every document is re-read with them.
    pub fn set_config(&mut self, config: HostConfig) {
        if config == self.config {
            return;
        }
        self.config = config;
        let paths: Vec<PathBuf> = self.docs.keys().cloned().collect();
        for p in paths {
            let form = self.config.form_for(&p).unwrap_or(SourceForm::Free);
            if let Some(d) = self.docs.get_mut(&p) {
                d.form = form;
                d.chunks.clear();
                d.spans = None;
                d.pending.clear();
                d.stale = true;
            }
        }
        self.snapshot = None;
    }

    /// Whether the host treats `path` as Fortran.
    pub fn is_fortran(&self, path: &Path) -> bool {
        self.config.form_for(path).is_some()
    }

    pub fn document(&self, path: &Path) -> Option<&Document> {
        self.docs.get(path)
    }

    pub fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.docs.keys()
    }

    /// Sets a file's whole text (opening it, or indexing it from disk).
    pub fn set_text(&mut self, path: &Path, text: &str, open: bool, version: i32) {
        let form = self.config.form_for(path).unwrap_or(SourceForm::Free);
        let doc = self
            .docs
            .entry(path.to_path_buf())
            .or_insert_with(|| Document {
                path: path.to_path_buf(),
                rope: None,
                text: Arc::from(""),
                lines: Arc::new(LineIndex::new("")),
                form,
                open,
                version,
                preprocessed: None,
                chunks: Vec::new(),
                pending: Vec::new(),
                spans: None,
                stale: true,
            });
        if doc.open && !open {
            // The editor's copy wins over the disk's while it is open.
            return;
        }
        if doc.open != open {
            // Snapshots record which documents are open.
            doc.open = open;
            self.snapshot = None;
        }
        doc.version = version;
        if &*doc.text == text {
            if open && doc.rope.is_none() {
                doc.rope = Some(Rope::from_str(text));
            }
        } else {
            doc.rope = open.then(|| Rope::from_str(text));
            doc.text = Arc::from(text);
            doc.lines = Arc::new(LineIndex::new(text));
            doc.pending.clear();
            doc.spans = None;
            doc.stale = true;
            self.snapshot = None;
        }
    }

    /// The editor closed the document: it stays indexed with its last text.
    pub fn close(&mut self, path: &Path) {
        if let Some(d) = self.docs.get_mut(path) {
            if d.open {
                d.open = false;
                d.rope = None;
                self.snapshot = None;
            }
        }
    }

    /// A file changed on disk: the documents whose preprocessing read it
    /// (as a header) are preprocessed again at the next snapshot. Returns
    /// whether any document read it.
    pub fn header_changed(&mut self, path: &Path) -> bool {
        let mut any = false;
        for d in self.docs.values_mut() {
            let reads = d.preprocessed.as_ref().is_some_and(|pp| {
                pp.headers().any(|(_, f)| {
                    f.path == path || std::fs::canonicalize(&f.path).is_ok_and(|c| c == path)
                })
            });
            if reads {
                d.pending.clear();
                d.stale = true;
                any = true;
            }
        }
        if any {
            self.snapshot = None;
        }
        any
    }

    /// Removes a file (deleted on disk).
    pub fn remove(&mut self, path: &Path) {
        if self.docs.remove(path).is_some() {
            self.snapshot = None;
        }
    }

    /// Applies changes in order. Ranges are clamped to the text and to
    /// char boundaries; an unknown document is ignored (returns false).
    pub fn edit(&mut self, path: &Path, changes: &[TextChange], version: i32) -> bool {
        let Some(doc) = self.docs.get_mut(path) else {
            return false;
        };
        let rope = doc.rope.get_or_insert_with(|| Rope::from_str(&doc.text));
        // The new text, spliced as the rope is (copying the rope out
        // chunk by chunk is slower).
        let mut text = String::with_capacity(doc.text.len() + 64);
        text.push_str(&doc.text);
        for ch in changes {
            match ch.range {
                None => {
                    *rope = Rope::from_str(&ch.text);
                    text.clear();
                    text.push_str(&ch.text);
                    doc.pending.clear();
                    doc.chunks.clear();
                    doc.spans = None;
                }
                Some(r) => {
                    let len = rope.len_bytes();
                    let start = clamp_boundary(rope, (r.start as usize).min(len));
                    let end = clamp_boundary(rope, (r.end as usize).clamp(start, len));
                    let start_point = point_of(rope, start);
                    let old_end_point = point_of(rope, end);
                    let cs = rope.byte_to_char(start);
                    let ce = rope.byte_to_char(end);
                    // An edit inside one line that keeps it plain and its
                    // signature the same keeps the chunks' lines.
                    let one_line =
                        start_point.row == old_end_point.row && !ch.text.contains(['\n', '\r']);
                    let before = one_line.then(|| line_signature(rope, start_point.row));
                    rope.remove(cs..ce);
                    rope.insert(cs, &ch.text);
                    if end <= text.len()
                        && text.is_char_boundary(start)
                        && text.is_char_boundary(end)
                    {
                        text.replace_range(start..end, &ch.text);
                    }
                    let kept = before.is_some_and(|b| {
                        b.is_plain() && line_signature(rope, start_point.row) == b
                    });
                    if !kept {
                        doc.spans = None;
                    }
                    let new_end = start + ch.text.len();
                    doc.pending.push(InputEdit {
                        start_byte: start,
                        old_end_byte: end,
                        new_end_byte: new_end,
                        start_position: start_point,
                        old_end_position: old_end_point,
                        new_end_position: point_of(rope, new_end),
                    });
                }
            }
        }
        if text.len() != rope.len_bytes() {
            // Not the rope's text (never seen): the rope is the truth.
            text = rope.to_string();
        }
        doc.lines = Arc::new(LineIndex::new(&text));
        doc.text = Arc::from(text);
        doc.version = version;
        doc.stale = true;
        self.snapshot = None;
        true
    }

    /// The snapshot for the current texts, recomputing what changed.
    pub fn snapshot(&mut self) -> Arc<Snapshot> {
        if let Some(s) = &self.snapshot {
            return s.clone();
        }
        let started = std::time::Instant::now();
        let paths: Vec<PathBuf> = self
            .docs
            .iter()
            .filter(|(_, d)| d.stale)
            .map(|(p, _)| p.clone())
            .collect();
        for p in &paths {
            self.preprocess(p);
        }
        // Plan every stale document's chunks, then parse and lower all new
        // chunks of all documents at once, in parallel.
        let mut jobs = Vec::new();
        let plans: Vec<ChunkPlan> = paths
            .iter()
            .filter_map(|p| self.plan_chunks(p, &mut jobs))
            .collect();
        let planned = std::time::Instant::now();
        self.times.plan = planned - started;
        let done: Vec<Arc<ChunkData>> = if jobs.len() == 1 {
            jobs.into_iter()
                .map(|j| parse_chunk(&mut self.parser, j))
                .collect()
        } else {
            jobs.into_par_iter()
                .map_init(FortranParser::new, parse_chunk)
                .collect()
        };
        for plan in plans {
            if let Some(doc) = self.docs.get_mut(&plan.path) {
                doc.chunks = plan
                    .slots
                    .into_iter()
                    .map(|(mut c, job)| {
                        if let Some(d) = job.and_then(|j| done.get(j)) {
                            c.data = d.clone();
                        }
                        c
                    })
                    .collect();
                doc.pending.clear();
                doc.stale = false;
            }
        }
        self.times.parse = planned.elapsed();
        let (snap, link) = self.build(&paths);
        self.times.link = link;
        let snap = Arc::new(snap);
        self.snapshot = Some(snap.clone());
        drop_elsewhere(self.last.replace(snap.clone()));
        snap
    }

    /// Runs the C preprocessor on document `path` when the settings say
    /// it applies, and replaces its Fortran INCLUDE lines (an included
    /// file's text is the editor's when it is open, else the disk's); or
    /// drops a previous run's output.
    fn preprocess(&mut self, path: &Path) {
        let cpp = &self.config.cpp;
        let result = match self.docs.get(path) {
            Some(doc) => {
                let fixed = matches!(doc.form, SourceForm::Fixed(_));
                let run_cpp = cpp.applies_to(path);
                let includes =
                    || dfort_syntax::cpp::fortran_include::has_include_line(&doc.text, fixed);
                (run_cpp || includes()).then(|| {
                    let options = cpp.options(fixed);
                    let docs = &self.docs;
                    let read = |p: &Path| match docs.get(p) {
                        Some(d) => Some(d.text.to_string()),
                        None => std::fs::read_to_string(p).ok(),
                    };
                    Arc::new(PreprocessedDoc::new(
                        path, &doc.text, &doc.lines, run_cpp, &options, &read,
                    ))
                })
            }
            None => None,
        };
        if let Some(doc) = self.docs.get_mut(path) {
            doc.preprocessed = result;
        }
    }

    /// Plans one document's chunks for its current text: chunks whose text
    /// is unchanged are reused; the others become parse jobs in `jobs`.
    fn plan_chunks(&mut self, path: &Path, jobs: &mut Vec<ParseJob>) -> Option<ChunkPlan> {
        let doc = self.docs.get_mut(path)?;
        // A preprocessed document's chunks are cut from the output.
        let (text, lines): (Arc<str>, Arc<LineIndex>) = match &doc.preprocessed {
            Some(pp) => (
                Arc::from(pp.pp.text.as_str()),
                Arc::new(LineIndex::new(&pp.pp.text)),
            ),
            None => (doc.text.clone(), doc.lines.clone()),
        };
        let form = doc.form;
        // Free-form text of the document itself: its cut is kept while
        // edits leave it valid ([`Document::spans`]).
        let cacheable = form == SourceForm::Free && doc.preprocessed.is_none();
        let spans = match doc.spans.clone().filter(|_| cacheable) {
            Some(spans) => spans,
            None => {
                let spans = Arc::new(match form {
                    SourceForm::Free => split_fine(&text),
                    SourceForm::Fixed(opts) => {
                        split_fine(&normalize_fixed(&text, opts.line_length).text)
                    }
                });
                doc.spans = cacheable.then(|| spans.clone());
                spans
            }
        };
        // The old chunks by the hash of their content (candidates only:
        // reuse needs the same content), each reused at most once.
        let mut old: Vec<(u64, usize)> = doc
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (c.key.hash, i))
            .collect();
        old.sort_unstable();
        let mut taken = vec![false; doc.chunks.len()];
        // The one edit whose chunk tree-sitter can reparse incrementally
        // (not in a preprocessed document, whose edits are the source's).
        let single_edit = match doc.pending.as_slice() {
            [e] if doc.preprocessed.is_none() => Some(*e),
            _ => None,
        };
        // Keep trees only of chunks being edited in open free-form
        // documents: a tree costs about 70 bytes per byte of source.
        let keep_tree = doc.open && form == SourceForm::Free && single_edit.is_some();
        let old_chunks = std::mem::take(&mut doc.chunks);
        // Chunks in order: reused, or a job to parse (index into `jobs`).
        let mut slots: Vec<(Chunk, Option<usize>)> = Vec::with_capacity(spans.len());
        for (span, role) in spans.iter() {
            let role = *role;
            // Chunks are whole lines; normalisation keeps lines, so the
            // span's lines delimit the original text too.
            let start = lines
                .line_start(span.first_line)
                .unwrap_or(lines.text_len());
            let end = lines
                .line_start(span.last_line + 1)
                .unwrap_or(lines.text_len())
                .max(start);
            let chunk_text = text.get(start as usize..end as usize).unwrap_or("");
            let hash = ChunkKey::hash_of(chunk_text, form, role);
            let first = old.partition_point(|(h, _)| *h < hash);
            let reused = old[first..]
                .iter()
                .take_while(|(h, _)| *h == hash)
                .map(|(_, i)| *i)
                .find(|&i| !taken[i] && old_chunks[i].key.is(hash, chunk_text, form, role))
                .map(|i| {
                    taken[i] = true;
                    old_chunks[i].clone()
                });
            if let Some(c) = reused {
                slots.push((
                    Chunk {
                        base: start,
                        len: end - start,
                        key: c.key,
                        role,
                        data: c.data,
                    },
                    None,
                ));
                continue;
            }
            // An indexed document's chunks share its text; an open one's
            // copy theirs (each edit makes a new text, which chunks cut
            // from it would keep alive, one version per edited chunk).
            let (source, range) = match doc.open {
                false => (text.clone(), start as usize..end as usize),
                true => (Arc::from(chunk_text), 0..chunk_text.len()),
            };
            let key = ChunkKey {
                hash,
                source,
                range,
                form,
                role,
            };
            let file = FileId(self.next_file);
            let chunk = Chunk {
                base: start,
                len: end - start,
                key,
                role,
                data: Arc::new(ChunkData {
                    file,
                    tree: None,
                    lowered: LoweredFile {
                        file,
                        units: IdVec::new(),
                        diagnostics: Vec::new(),
                        contained_in: None,
                    },
                    diagnostics: Vec::new(),
                    link: LinkReads::Units(Arc::from([])),
                }),
            };
            self.next_file = self.next_file.wrapping_add(1);
            if role == ChunkRole::ModuleTail {
                // `end module`: its module's head is parsed with a
                // synthetic end; nothing here to parse.
                slots.push((chunk, None));
                continue;
            }
            // The previous tree of the chunk the edit fell in, adjusted.
            let old_tree = single_edit.and_then(|e| {
                let oc = old_chunks.iter().find(|c| {
                    (c.base as usize) <= e.start_byte && e.old_end_byte <= (c.base + c.len) as usize
                })?;
                // The old tree describes the new chunk only if the new
                // chunk is the old one with the edit applied: same start,
                // the length changed by the edit's (the chunks around an
                // edit may be cut differently after it).
                let grown = e.new_end_byte as i64 - e.old_end_byte as i64;
                if oc.base != start
                    || oc.len as i64 + grown != (end - start) as i64
                    || oc.role != role
                {
                    return None;
                }
                let mut tree = oc.data.tree.clone()?;
                tree.edit(&relative_edit(&e, start as usize, span.first_line as usize));
                Some(tree)
            });
            // A module's head ends at `contains`: close it for the parser
            // (past the chunk's text, so no range reaches the document).
            let mut parse_text = chunk_text.to_string();
            if role == ChunkRole::ModuleHead {
                if !parse_text.ends_with('\n') {
                    parse_text.push('\n');
                }
                parse_text.push_str("      end module\n");
            }
            slots.push((chunk, Some(jobs.len())));
            jobs.push(ParseJob {
                file,
                path: path.to_path_buf(),
                form,
                text: parse_text,
                old_tree,
                keep_tree,
            });
        }
        Some(ChunkPlan {
            path: path.to_path_buf(),
            slots,
        })
    }

    /// Links every chunk of every document and runs the analyses. When
    /// no chunk that other chunks link against changed since the last
    /// snapshot, only the changed chunks' units are linked (against the
    /// last program) and re-analysed.
    fn build(&self, changed: &[PathBuf]) -> (Snapshot, std::time::Duration) {
        let started = std::time::Instant::now();
        let linked = match self.last.as_deref() {
            Some(prev) => self.relink_changed(prev, changed),
            None => None,
        };
        let Linked {
            docs,
            places,
            program,
            link_diagnostics,
            changes,
        } = linked.unwrap_or_else(|| self.link_all());
        let linked = started.elapsed();
        // The analyses run at the first read, from the last snapshot's.
        let previous = self.last.clone();
        let mut depth = previous.as_deref().map_or(0, |p| p.pending_depth()) + 1;
        if depth > MAX_PENDING {
            if let Some(p) = &previous {
                p.analysis();
            }
            depth = 1;
        }
        let recipe = Recipe {
            changes,
            previous,
            depth,
        };
        let snapshot = Snapshot {
            program,
            analysed: OnceLock::new(),
            recipe: Mutex::new(Some(recipe)),
            docs,
            places,
            link_diagnostics,
            config: self.config.clone(),
        };
        (snapshot, linked)
    }

    /// Links every chunk of every document afresh.
    fn link_all(&self) -> Linked {
        let n = self.last.as_ref().map_or(0, |s| s.places.len());
        // Every chunk's lowering in link order, with the index of its
        // module's head chunk for a module procedure.
        let mut lowered = Vec::with_capacity(n);
        let mut places = ChunkMap::default();
        let mut docs = DocMap::new();
        // The id of the next chunk's first unit: the linker numbers units
        // in this order.
        let mut next_unit = 0u32;
        for (path, d) in &self.docs {
            let mut head: Option<usize> = None;
            for c in &d.chunks {
                let contained_in = match c.role {
                    ChunkRole::ModuleHead => {
                        head = Some(lowered.len());
                        None
                    }
                    ChunkRole::ModuleProcedure => head,
                    ChunkRole::ModuleTail | ChunkRole::Unit => {
                        head = None;
                        None
                    }
                };
                lowered.push(lowering(&c.data, contained_in));
            }
            let (view, chunk_places) = doc_view(path, d, next_unit);
            next_unit = view.units.end;
            places.extend(chunk_places);
            docs.insert(path.clone(), Arc::new(view));
        }
        let (program, link_diagnostics) = link(lowered);
        Linked {
            docs,
            places,
            program,
            link_diagnostics,
            changes: None,
        }
    }

    /// Links again only the new chunks of the documents that changed
    /// since `prev` (`changed`: those planned again; any other whose view
    /// differs), sharing every other document's view and chunk places
    /// with `prev`. `None` when the documents are not the same ones or
    /// a changed one's chunks link differently for the other chunks
    /// ([`LinkItem`]: then unit ids and links elsewhere may move).
    fn relink_changed(&self, prev: &Snapshot, changed: &[PathBuf]) -> Option<Linked> {
        if prev.docs.len() != self.docs.len() {
            return None;
        }
        let mut docs = prev.docs.clone();
        let mut places = prev.places.clone();
        let mut replaced = Vec::new();
        // Per unit, in link order: whether its chunk is new.
        let mut body_changed: IdVec<UnitId, bool> =
            IdVec::from_elem(false, prev.program.units.len());
        for ((path, d), (old_path, old)) in self.docs.iter().zip(&prev.docs) {
            if path.as_os_str() != old_path.as_os_str() {
                return None;
            }
            let same_pp = match (&d.preprocessed, &old.preprocessed) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            };
            let same = Arc::ptr_eq(&d.text, &old.text)
                && d.open == old.open
                && d.version == old.version
                && d.form == old.form
                && same_pp
                && !changed.iter().any(|c| c.as_os_str() == path.as_os_str());
            if same {
                continue;
            }
            let (view, chunk_places) = doc_view(path, d, old.units.start);
            if !same_link(&view.link, &old.link) {
                return None;
            }
            for (f, _, _) in &old.chunks {
                places.remove(f);
            }
            for (f, place) in chunk_places {
                if !prev.places.contains_key(&f) {
                    replaced.push((UnitId(place.units.start), lowering(&place.data, None)));
                    for u in place.units.clone() {
                        body_changed[UnitId(u)] = true;
                    }
                }
                places.insert(f, place);
            }
            docs.insert(path.clone(), Arc::new(view));
        }
        let (program, mut link_diagnostics) = relink(&prev.program, replaced);
        // The unchanged units' diagnostics are the last link's.
        link_diagnostics.extend(
            prev.link_diagnostics
                .iter()
                .filter(|(f, d)| d.code != "argument-count" && places.contains_key(f))
                .cloned(),
        );
        let changes = Changes::between(&prev.program, &program, body_changed);
        Some(Linked {
            docs,
            places,
            program,
            link_diagnostics,
            changes,
        })
    }
}

/// A linked program with the documents and chunks it was linked from.
struct Linked {
    docs: DocMap,
    places: ChunkMap<ChunkPlace>,
    program: Program,
    link_diagnostics: Vec<(FileId, Diagnostic)>,
    /// How the program differs from the last snapshot's, when it was
    /// relinked from it.
    changes: Option<Changes>,
}

/// Document `d`'s view and the places of its chunks, its units
/// numbered from `first_unit`.
fn doc_view(path: &Path, d: &Document, first_unit: u32) -> (DocView, Vec<(FileId, ChunkPlace)>) {
    let shared_path: Arc<Path> = Arc::from(path);
    let mut next_unit = first_unit;
    let mut places = Vec::with_capacity(d.chunks.len());
    let mut link = Vec::with_capacity(d.chunks.len());
    for c in &d.chunks {
        let units = next_unit..next_unit + c.data.lowered.units.len() as u32;
        next_unit = units.end;
        link.push(LinkItem {
            role: c.role,
            units: c.data.lowered.units.len(),
            reads: c.data.link.clone(),
        });
        places.push((
            c.data.file,
            ChunkPlace {
                path: shared_path.clone(),
                base: c.base,
                len: c.len,
                units,
                data: c.data.clone(),
            },
        ));
    }
    let view = DocView {
        path: path.to_path_buf(),
        text: d.text.clone(),
        lines: d.lines.clone(),
        form: d.form,
        open: d.open,
        version: d.version,
        chunks: places.iter().map(|(f, p)| (*f, p.base, p.len)).collect(),
        preprocessed: d.preprocessed.clone(),
        units: first_unit..next_unit,
        link: link.into(),
    };
    (view, places)
}

/// Whether two documents' chunks link the same for the other chunks.
fn same_link(a: &Arc<[LinkItem]>, b: &Arc<[LinkItem]>) -> bool {
    Arc::ptr_eq(a, b) || a[..] == b[..]
}

/// A chunk's lowering for the linker; lowering diagnostics are reported
/// with the chunk's own.
fn lowering(data: &ChunkData, contained_in: Option<usize>) -> LoweredFile {
    let mut lf = data.lowered.clone();
    lf.diagnostics.clear();
    lf.contained_in = contained_in;
    lf
}

/// What linking the other chunks reads of one chunk: with the documents'
/// paths in order, equal items mean unchanged chunks link exactly as
/// before.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LinkItem {
    role: ChunkRole,
    units: usize,
    reads: LinkReads,
}

/// What other chunks' linking reads of one chunk.
#[derive(Clone, Debug, Eq)]
enum LinkReads {
    /// The whole chunk (by its file id, which changes with its content).
    Whole(FileId),
    /// The names, kinds and nesting of its units, shared between the
    /// snapshots that hold the chunk (compared by pointer first, so an
    /// unchanged chunk compares at once).
    Units(Arc<[LinkUnit]>),
}

impl PartialEq for LinkReads {
    /// The same shared units compare at once (`Arc`'s own equality does
    /// not look at the pointer for a slice): an unchanged chunk costs
    /// nothing in the comparison of two snapshots' link keys.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (LinkReads::Whole(a), LinkReads::Whole(b)) => a == b,
            (LinkReads::Units(a), LinkReads::Units(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct LinkUnit {
    name: String,
    kind: UnitKind,
    parent: Option<UnitId>,
    /// Its dummies' names, types, ranks and OPTIONAL: a call of a
    /// generic name elsewhere picks its specific by them, so a change
    /// relinks the callers (a module procedure whose dummy lost its
    /// declaration stayed the pick of an unchanged caller).
    dummies: Vec<String>,
}

/// Parses and lowers one chunk.
fn parse_chunk(parser: &mut FortranParser, job: ParseJob) -> Arc<ChunkData> {
    let parsed = parser.parse_unit(job.path, job.text, job.form, job.old_tree.as_ref());
    let lowered = lower_file(&parsed, job.file);
    let link = link_reads(&lowered);
    let mut diagnostics = parsed.diagnostics.clone();
    diagnostics.extend(lowered.diagnostics.iter().cloned());
    let tree = if job.keep_tree {
        parsed.chunks.into_iter().next().map(|c| c.tree)
    } else {
        None
    };
    Arc::new(ChunkData {
        file: job.file,
        tree,
        lowered,
        diagnostics,
        link,
    })
}

/// What other chunks' linking reads of this one: the whole chunk when
/// it holds a module or a host of internal procedures, else the names,
/// kinds and nesting of its units.
fn link_reads(lf: &LoweredFile) -> LinkReads {
    if lf
        .units
        .iter()
        .any(|u| u.kind == UnitKind::Module || !u.children.is_empty())
    {
        return LinkReads::Whole(lf.file);
    }
    let units = lf.units.iter().map(|u| {
        let dummies = u
            .args
            .iter()
            .map(|&a| {
                let d = u.symbol(a);
                format!(
                    "{} {:?} {:?} {} {}",
                    d.name,
                    d.ty,
                    d.typing,
                    d.dims.len(),
                    d.attrs.optional
                )
            })
            .collect();
        LinkUnit {
            name: u.name.clone(),
            kind: u.kind,
            parent: u.parent,
            dummies,
        }
    });
    LinkReads::Units(units.collect())
}

/// The start of the char holding byte `b`.
fn clamp_boundary(rope: &Rope, b: usize) -> usize {
    rope.char_to_byte(rope.byte_to_char(b))
}

/// Row and byte column of a byte offset, as tree-sitter counts them.
fn point_of(rope: &Rope, byte: usize) -> Point {
    let byte = byte.min(rope.len_bytes());
    let line = rope.byte_to_line(byte);
    let col = byte - rope.line_to_byte(line);
    Point::new(line, col)
}

/// An edit of the document as an edit of the chunk starting at `base`
/// (line `first_line`).
fn relative_edit(e: &InputEdit, base: usize, first_line: usize) -> InputEdit {
    let p = |pt: Point| Point::new(pt.row.saturating_sub(first_line), pt.column);
    InputEdit {
        start_byte: e.start_byte - base,
        old_end_byte: e.old_end_byte - base,
        new_end_byte: e.new_end_byte - base,
        start_position: p(e.start_position),
        old_end_position: p(e.old_end_position),
        new_end_position: p(e.new_end_position),
    }
}
