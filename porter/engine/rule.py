"""The base class every rule derives from, and the data a rule reports.

A rule is a libcst ``BatchableCSTVisitor``: the engine runs all rules of a file in one pass over
one index of the tree (``porter.engine.fastcst.walk``); metadata is shared per file and computed on demand
(parents from the index, qualified names by ``porter.engine.fastcst.names``, scopes by libcst when a rule asks
for them). A rule never
changes the tree itself. It reports *edits* — a transform of one original node, applied by the
engine to the node as already updated by edits below it — together with ``Change`` records.
Edits to the same node are applied in rule order (``Rule.order``, then code).

Rule authors: match module-level APIs with ``self.qualified(node)`` / ``self.matches(node, ...)``
(alias-aware), never by spelling; build replacements from the *updated* node
(``lambda n: n.with_changes(...)``) so edits of other rules inside it survive.
"""

from __future__ import annotations

import abc
import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeVar

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    QualifiedNameSource,
    ScopeProvider,
)

from porter.engine.changes import Change, ImportSpec, Kind, Safety
from porter.engine.fastcst.names import LazyQualifiedNames
from porter.engine.fastcst.positions import StatementPositions
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.options import Options
from porter.engine.patterns import searcher
from porter.engine.suppress import Suppressions

if TYPE_CHECKING:
    from porter.engine.astcheck import SourceFacts

NodeTransform = Callable[[cst.CSTNode], "cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel"]
MARKER_PREFIX = "# porter:"
_NO_NAMES: frozenset[QualifiedName] = frozenset()


@dataclass
class Edit:
    """One pending modification of one original node (identified by ``id``)."""

    target: cst.CSTNode
    code: str
    order: tuple[int, str]
    transform: NodeTransform | None = None
    remove: bool = False
    before: Sequence[cst.BaseStatement] = ()
    after: Sequence[cst.BaseStatement] = ()
    comments: Sequence[str] = ()
    imports: Sequence[ImportSpec] = ()
    port_context_only: bool = False
    # The transform removes calls on purpose (``scaler.scale(loss)`` -> ``loss``); any other
    # transform that loses a call is refused by the engine (it would drop part of an expression).
    drops_calls: bool = False
    # The transform wraps the statement in one that holds it (``if c:`` around it): the markers other
    # edits put on the statement are added before the transform runs, so it can keep them on the
    # statement it holds, where a second pass looks for them.
    wraps: bool = False


@dataclass
class FileContext:
    """What every rule of one file shares: the path, the options, the raw text and the module."""

    path: str
    text: str
    module: cst.Module
    options: Options
    edits: list[Edit] = field(default_factory=list)
    changes: list[tuple[Change, bool]] = field(default_factory=list)  # (change, from a port-context rule)
    # Analyses several rules share, computed once per file (``Rule.analysis``), keyed by their type.
    analyses: dict[type, object] = field(default_factory=dict)
    wrapper: MetadataWrapper | None = None
    tree: TreeIndex | None = None
    python_tree: ast.Module | None = None  # CPython's tree of ``text``: statements' lines for positions
    _positions: Callable[[cst.CSTNode], tuple[int, int]] | None = None
    _suppressions: Suppressions | bool | None = None  # the text's directives (False: none), on first use
    # Imports the port may have made unused: (code, spec); removed only if really unused after.
    maybe_unused: list[tuple[str, ImportSpec, bool]] = field(default_factory=list)


    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """(line, column) of ``node`` in the original source.

        Positions cost code generation, so they are computed on first use and per top-level
        statement (``porter.engine.fastcst.positions``): a file on which no rule reports anything never pays.
        """
        if self._positions is None:
            if self.tree is not None:
                self._positions = StatementPositions(self.module, self.tree.parents, self.text, self.python_tree)
            else:
                wrapper = self.wrapper or MetadataWrapper(self.module, unsafe_skip_copy=True)
                whole = wrapper.resolve(PositionProvider)
                self._positions = lambda node: (whole[node].start.line, whole[node].start.column)
        return self._positions(node)

    def suppressed(self, code: str, node: cst.CSTNode) -> bool:
        """Whether the engine will drop an edit of ``code`` on ``node``'s statement (a ``# noqa`` /
        ``# porter: ignore`` there, or a per-file ignored code): a rule whose plan turns other
        findings off (a sync site it handles) then keeps them on."""
        if self.options.suppress and code.startswith(self.options.suppress):
            return True
        if self._suppressions is None:
            self._suppressions = Suppressions.of(self.text) or False
        found = self._suppressions
        return isinstance(found, Suppressions) and found.covers(code, self.position(node)[0])


class FileAnalysis(abc.ABC):
    """A fact about one file that several rules need (step loops, integer-valued names, float16
    sources ...). Subclasses compute it from any rule of the file; ``Rule.analysis`` computes it on
    first use and hands every later caller the same object."""

    @classmethod
    @abc.abstractmethod
    def compute(cls: type[AnalysisT], rule: Rule) -> AnalysisT:
        """The analysis of ``rule``'s file (read it through the rule's shared metadata)."""


AnalysisT = TypeVar("AnalysisT", bound=FileAnalysis)


class FileMetadata(Mapping[type, Mapping[cst.CSTNode, object]]):
    """The metadata rules may read (``Rule.METADATA_DEPENDENCIES``), each computed on first use."""

    def __init__(self, context: FileContext) -> None:
        assert context.tree is not None and context.wrapper is not None
        self._context = context
        wrapper = context.wrapper
        # Read directly by Rule.qualified/parent (libcst's get_metadata costs several calls per read).
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = context.tree.parents
        self.names = LazyQualifiedNames(context.tree, lambda: wrapper.resolve(QualifiedNameProvider))  # type: ignore[arg-type]
        self._values: dict[type, Mapping[cst.CSTNode, object]] = {
            ParentNodeProvider: self.parents,
            QualifiedNameProvider: self.names,
        }
        # Rule.qualified's answer per node: several rules ask it of every name and attribute.
        self.spelled: dict[cst.CSTNode, tuple[str, ...]] = {}

    def qualified(self, node: cst.CSTNode) -> tuple[str, ...]:
        """The names ``Rule.qualified(node)`` is the set of, computed once per node for all the
        file's rules, in the order that set was built in (``set()`` of them iterates as it did)."""
        found = self.spelled.get(node)
        if found is None:
            names = self.names.get(node, _NO_NAMES) if _rooted_at_name(node) else _NO_NAMES
            found = self.spelled[node] = tuple([q.name for q in names])
        return found

    def __getitem__(self, provider: type) -> Mapping[cst.CSTNode, object]:
        found = self._values.get(provider)
        if found is None:
            if provider not in Rule.METADATA_DEPENDENCIES:
                raise KeyError(provider)
            assert self._context.wrapper is not None
            found = self._values[provider] = self._context.wrapper.resolve(provider)
        return found

    def __contains__(self, provider: object) -> bool:
        return provider in Rule.METADATA_DEPENDENCIES

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(Rule.METADATA_DEPENDENCIES)

    def __len__(self) -> int:
        return len(Rule.METADATA_DEPENDENCIES)


class Rule(cst.BatchableCSTVisitor):
    """Base class. Subclasses set the class attributes and implement ``visit_*``/``leave_*``.

    The class docstring is the rule's documentation (``porter explain CODE`` prints it) and must
    have the sections What it does / Why / Before / After / Safety.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    safety: ClassVar[Safety] = Safety.SAFE
    # Raw-text words; the rule runs on a file only if one of them appears. Empty: always runs.
    triggers: ClassVar[tuple[str, ...]] = ()
    # A regex (``re.search``) the text must match too, where no word is narrow enough. Like the
    # words, a necessary condition: a file it does not match can never be edited by the rule.
    trigger_pattern: ClassVar[str] = ""
    # Further codes this rule emits (usually review markers), with a one-line summary each.
    extra_codes: ClassVar[Mapping[str, str]] = {}
    # Those of extra_codes whose edits are safe (the rest are review items in `porter rules`).
    safe_extra_codes: ClassVar[frozenset[str]] = frozenset()
    # Performance rules run only on files that are being ported (see Options.all_files).
    requires_port_context: ClassVar[bool] = False
    order: ClassVar[int] = 100

    # PositionProvider is left out on purpose: see FileContext.position.
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ParentNodeProvider, ScopeProvider)

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    # ----------------------------------------------------------------- class-level facts
    @classmethod
    def all_codes(cls) -> tuple[str, ...]:
        return (cls.code, *cls.extra_codes)

    @classmethod
    def code_safety(cls, code: str) -> Safety:
        if code == cls.code:
            return cls.safety
        return Safety.SAFE if code in cls.safe_extra_codes else Safety.REVIEW

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        if cls.triggers and not any(word in text for word in cls.triggers):
            return False
        return not cls.trigger_pattern or searcher(cls.trigger_pattern)(text)

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """A necessary condition of this rule editing the file, read from CPython's tree of it
        (``porter.engine.astcheck``): False only when the rule provably edits nothing there. A
        rule that overrides it proves that in the override's docstring. Default: no check."""
        return True

    @property
    def options(self) -> Options:
        return self.context.options

    def analysis(self, kind: type[AnalysisT]) -> AnalysisT:
        """The file's ``kind`` analysis, computed once per file and shared by every rule."""
        found = self.context.analyses.get(kind)
        if found is None:
            found = self.context.analyses[kind] = kind.compute(self)
        return found  # type: ignore[return-value]

    # ----------------------------------------------------------------- name resolution
    def qualified(self, node: cst.CSTNode) -> set[str]:
        """Fully qualified names ``node`` may refer to (alias-aware); empty when unknown.

        Only a dotted chain rooted at a name is a module API: libcst names ``f(0).x`` as ``f.x``
        (it reads through calls and subscripts), and a rule matching that would rewrite the
        attribute of a call's *result* as if it were a module attribute, dropping the call.
        """
        metadata = self.metadata
        if type(metadata) is FileMetadata:
            return set(metadata.qualified(node))  # a set of its own: callers may change it
        if not _rooted_at_name(node):
            return set()
        return {q.name for q in self._qualified_names(node)}

    def imported(self, node: cst.CSTNode) -> set[str]:
        """Like ``qualified``, but only names that come from an import (not a local assignment)."""
        if not _rooted_at_name(node):
            return set()
        return {q.name for q in self._qualified_names(node) if q.source is QualifiedNameSource.IMPORT}

    def _qualified_names(self, node: cst.CSTNode) -> Iterable[QualifiedName]:
        """``get_metadata(QualifiedNameProvider, node, set())``, read straight from the engine's
        mapping when it is there (the rules ask this about a million times on the slice)."""
        metadata = self.metadata
        if type(metadata) is FileMetadata:
            return metadata.names.get(node, _NO_NAMES)
        names: Iterable[QualifiedName] = self.get_metadata(QualifiedNameProvider, node, set())
        return names

    def matches(self, node: cst.CSTNode, *names: str) -> bool:
        """Whether ``node`` refers to one of ``names`` (fully qualified, e.g. ``torch.cuda.is_available``)."""
        return not self.qualified(node).isdisjoint(names)

    def matches_prefix(self, node: cst.CSTNode, prefix: str) -> str | None:
        """The qualified name of ``node`` that starts with ``prefix``, if any."""
        for name in self.qualified(node):
            if name == prefix.rstrip(".") or name.startswith(prefix):
                return name
        return None

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.context.position(node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        metadata = self.metadata
        if type(metadata) is FileMetadata:  # as in _qualified_names
            return metadata.parents.get(node)
        return self.get_metadata(ParentNodeProvider, node, None)

    def ancestors(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement:
        """The nearest enclosing statement (a simple statement line or a compound statement)."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            current = self.parent(current)
        if current is None:
            raise ValueError("node is not inside a statement")
        return current  # type: ignore[return-value]

    # ----------------------------------------------------------------- reporting
    def _record(
        self,
        node: cst.CSTNode,
        message: str | None,
        code: str | None,
        safety: Safety | None,
        kind: Kind,
        imports: Sequence[ImportSpec],
    ) -> str:
        used = code or self.code
        if used not in self.all_codes():
            raise ValueError(f"rule {self.name} emits undeclared code {used}")
        if message is not None:
            line, column = self.position(node)
            change = Change(
                code=used,
                message=message,
                path=self.context.path,
                line=line,
                column=column,
                safety=safety or self.safety,
                kind=kind,
                imports=tuple(imports),
            )
            self.context.changes.append((change, self.requires_port_context))
        return used

    def _edit(self, node: cst.CSTNode, code: str, **fields: object) -> None:
        self.context.edits.append(
            Edit(
                target=node,
                code=code,
                order=(self.order, self.code),
                port_context_only=self.requires_port_context,
                **fields,  # type: ignore[arg-type]
            )
        )

    def replace(
        self,
        node: cst.CSTNode,
        new: cst.CSTNode | NodeTransform,
        message: str | None,
        *,
        code: str | None = None,
        safety: Safety | None = None,
        imports: Sequence[ImportSpec] = (),
        drops_calls: bool = False,
        wraps: bool = False,
    ) -> None:
        """Replace ``node``. ``new`` is a node, or a function of the updated node (preferred).

        ``message=None`` records no Change (for a helper edit that belongs to another change).
        ``drops_calls``: the replacement removes calls deliberately; without it the engine refuses
        a replacement of an expression that has fewer calls than the node it replaces.
        ``wraps``: ``new`` puts the statement inside another (``Edit.wraps``): it is handed the
        statement with the other edits' markers already above it.
        """
        used = self._record(node, message, code, safety, Kind.EDIT, imports)
        transform: NodeTransform = new if callable(new) else (lambda _updated, _new=new: _new)  # type: ignore[misc]
        self._edit(node, used, transform=transform, imports=tuple(imports), drops_calls=drops_calls, wraps=wraps)

    def remove_statement(
        self,
        statement: cst.BaseStatement,
        message: str | None,
        *,
        code: str | None = None,
        safety: Safety | None = None,
    ) -> None:
        """Remove a whole statement (its own comment lines above it are kept)."""
        used = self._record(statement, message, code, safety, Kind.EDIT, ())
        self._edit(statement, used, remove=True)

    def insert_before(
        self,
        statement: cst.BaseStatement,
        new: Sequence[cst.BaseStatement],
        message: str | None,
        *,
        code: str | None = None,
        safety: Safety | None = None,
        imports: Sequence[ImportSpec] = (),
    ) -> None:
        self._insert_beside(statement, new, message, code, safety, imports, after=False)

    def insert_after(
        self,
        statement: cst.BaseStatement,
        new: Sequence[cst.BaseStatement],
        message: str | None,
        *,
        code: str | None = None,
        safety: Safety | None = None,
        imports: Sequence[ImportSpec] = (),
    ) -> None:
        self._insert_beside(statement, new, message, code, safety, imports, after=True)

    def _insert_beside(
        self,
        statement: cst.BaseStatement,
        new: Sequence[cst.BaseStatement],
        message: str | None,
        code: str | None,
        safety: Safety | None,
        imports: Sequence[ImportSpec],
        after: bool,
    ) -> None:
        used = self._record(statement, message, code, safety, Kind.EDIT, imports)
        new = tuple(new)
        self._edit(statement, used, before=() if after else new, after=new if after else (), imports=tuple(imports))

    def drop_import_if_unused(self, spec: ImportSpec, *, code: str | None = None) -> None:
        """Ask the engine to remove ``spec`` once the port is applied, if nothing uses it any more."""
        self.context.maybe_unused.append((code or self.code, spec, self.requires_port_context))

    def mark(self, node: cst.CSTNode, message: str, *, code: str | None = None) -> bool:
        """Add a review marker ``# porter: CODE message`` above the statement holding ``node``.

        Idempotent: when the statement already carries a marker with this code, nothing is
        recorded and False is returned.
        """
        used = code or self.code
        statement = self.statement_of(node)
        if has_marker(statement, used):
            return False
        message = one_line(message)
        self._record(node, message, used, Safety.REVIEW, Kind.MARKER, ())
        self._edit(statement, used, comments=(f"{MARKER_PREFIX} {used} {message}",))
        return True


def _rooted_at_name(node: cst.CSTNode) -> bool:
    """Whether ``node`` (or a call's callee) is ``name`` or ``name.attr.attr ...``."""
    # Exact types: Call, Attribute and Name have no subclasses, and an isinstance against a libcst
    # class (an ABC) that fails runs ABCMeta's Python check (3 million calls on the slice).
    current: cst.CSTNode = node.func if type(node) is cst.Call else node  # type: ignore[attr-defined]
    while type(current) is cst.Attribute:
        current = current.value  # type: ignore[attr-defined]
    return type(current) is cst.Name


def has_marker(statement: cst.BaseStatement, code: str) -> bool:
    """Whether the comment lines right above ``statement`` already hold a porter marker for ``code``."""
    lines = getattr(statement, "leading_lines", ())
    prefix = f"{MARKER_PREFIX} {code}"
    return any(line.comment is not None and line.comment.value.startswith(prefix) for line in lines)


def one_line(text: str) -> str:
    """``text`` on one line: a message quoting code of several lines (a parenthesised ``if``
    test) is a comment, and a comment cannot hold a line break."""
    if "\n" not in text and "\r" not in text:
        return text
    text = re.sub(r"\(\s*[\r\n]\s*", "(", text)
    text = re.sub(r"\s*[\r\n]\s*\)", ")", text)
    return re.sub(r"\s*[\r\n]\s*", " ", text)
