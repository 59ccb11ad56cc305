"""The engine: bytes in, a ``FileResult`` out. Knows no specific rule.

Pipeline per file: size/binary checks → decode (BOM, coding cookie) → trigger-word prefilter →
CPython's parse → the rules' checks on its tree (``astcheck.py``: no candidate rule can edit the
file and the verifier has nothing to say, so it is left as it was unparsed) → one libcst parse → one metadata computation shared by all rules (batched traversal) → edits
filtered by port context and select/ignore → applied in one transform (entering only the
edited nodes and their ancestors) → imports added/removed → the output put together from the
original text and the rebuilt statements' code (``fastcst/splice.py``) → the result re-parsed (porter never hands back code that does not parse: by CPython's parser
when it accepted the original, else by libcst).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from porter.engine.astcheck import admitted
from porter.engine.changes import Change
from porter.engine.fastcst.parse import no_collection, parse_module
from porter.engine.fastcst.splice import spliced
from porter.engine.fastcst.walk import TreeIndex, dispatch
from porter.engine.imports import ImportCollector, bound_name, still_read, top_level_imports, unused_import_edits
from porter.engine.options import TARGETS_NEURON, Options
from porter.engine.patterns import searcher
from porter.engine.registry import all_rules
from porter.engine.results import Failure, FileResult, Finding, Success, Unchanged
from porter.engine.rule import Edit, FileContext, FileMetadata, Rule
from porter.engine.suppress import Suppressions, drop_suppressed, has_candidates, inert, skip_file
from porter.engine.textio import SourceError, check_bytes, decode_source, port_from_disk
from porter.engine.verify import had_fallback, verify_port, verify_tree
from porter.rules._lib.backends import backend_scopes, keep_whole

_TARGETS_NEURON = re.compile(TARGETS_NEURON)


def migrate_file(path: str, options: Options | None = None, display_path: str | None = None) -> FileResult:
    """Port one file on disk. Never raises for a bad file: returns Success / Unchanged / Failure."""
    return port_from_disk(path, options, display_path, port_source)


def port_source(
    data: bytes,
    path: str = "<string>",
    options: Options | None = None,
    rules: Sequence[type[Rule]] | None = None,
) -> FileResult:
    """Port source bytes. ``path`` is only used in Changes and messages."""
    with no_collection():  # see fastcst/parse.py: none of the port's structures is a reference cycle
        return _port_source(data, path, options or Options(), rules)


def _port_source(data: bytes, path: str, options: Options, rules: Sequence[type[Rule]] | None) -> FileResult:
    try:
        check_bytes(data, options.max_file_size)
        decoded = decode_source(data)
    except SourceError as error:
        return Failure(path, str(error), kind="read")
    if skip_file(decoded.text):
        return Unchanged(path, skipped="skip-file")
    candidates = list(all_rules() if rules is None else rules)
    if options.prefilter:
        candidates = prefilter(decoded.text, options, candidates)
        if not candidates:
            return Unchanged(path, skipped="prefilter")
    deep, python_tree = _too_deep(decoded.text)
    if deep is not None:
        return Failure(path, deep, kind="parse")
    if options.prefilter and python_tree is not None and not admitted(decoded.text, python_tree, options, candidates):
        return Unchanged(path, skipped="ast-check")
    try:
        module = parse_module(data)
    except cst.ParserSyntaxError as error:
        return Failure(path, f"syntax error at line {error.raw_line}: {error.message}", kind="parse")
    except (SyntaxError, ValueError, UnicodeError, RecursionError) as error:
        return Failure(path, f"cannot parse: {type(error).__name__}: {error}", kind="parse")
    try:
        return _port_module(module, data, decoded.text, path, options, candidates, python_tree)
    except EditConflict as conflict:
        return Failure(path, f"{conflict}; the file was left as it was — please report it", kind="conflict")
    except RecursionError:
        return Failure(path, "code nested too deeply to port", kind="internal")
    except Exception as error:  # a bug in a rule must not stop a batch
        return Failure.internal(path, error)


# Deeper than this (in ``ast`` levels) libcst's recursive visitors cannot go (a chain of 200
# ``.cuda()`` calls, 404 levels, already fails), and its parser is quadratic in the depth (a chain
# of 1,000 calls: 10 s; of 3,000: minutes). Such code is refused before libcst parses it.
MAX_DEPTH = 500


def _too_deep(text: str) -> tuple[str | None, ast.Module | None]:
    """Why ``text`` is nested too deeply to port (with the line), or None; and CPython's tree of
    it when its parser accepts it (then the port's output is checked by that parser too, and put
    together from it: ``fastcst/splice.py``). CPython's parser is fast; code it rejects is left to
    libcst to report."""
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError):  # Python itself cannot compile it
        return "code nested too deeply to port (Python's own parser gives up on it); left as it was", None
    except (SyntaxError, ValueError):
        return None, None
    # Level by level (no per-node stack entries): the depth only. Each level's nodes are what
    # ast.iter_child_nodes yields, read from the fields without its generator per node.
    level: list[ast.AST] = [tree]
    depth = 1
    node_type = ast.AST
    while level:
        if depth > MAX_DEPTH:
            return _deep_line(tree), tree
        below: list[ast.AST] = []
        append, extend = below.append, below.extend
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, node_type):
                    append(value)
                elif isinstance(value, list):
                    extend([item for item in value if isinstance(item, node_type)])
        level = below
        depth += 1
    return None, tree


def _deep_line(tree: ast.AST) -> str:
    """The message for a tree deeper than ``MAX_DEPTH``, at the line of the first node found
    that deep (pre-order, last child first)."""
    stack: list[tuple[ast.AST, int, int]] = [(tree, 1, 1)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > MAX_DEPTH:
            return f"code nested too deeply to port (more than {MAX_DEPTH} levels at line {line}); left as it was"
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    raise AssertionError("not that deep")


def _parses(new: bytes, python_parses: bool) -> ast.Module | None:
    """Raise when the port's output does not parse: by CPython's parser when it accepted the
    original (a tenth of libcst's parse; its tree is returned), else by libcst (syntax newer
    than this Python)."""
    if python_parses:
        return ast.parse(new)
    cst.parse_module(new)
    return None


# Rule.triggered_by, the words-then-pattern test prefilter shares the patterns of (a rule that
# overrides it is asked itself).
_BASE_TRIGGERED_BY = Rule.triggered_by.__func__  # type: ignore[attr-defined]


def prefilter(text: str, options: Options, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """The rules worth parsing ``text`` for; empty means the file cannot change.

    A rule is a candidate when one of its trigger words is in the text. Rules that act only on
    files being ported count only when a porting rule is a candidate too, or the file already
    targets neuron: otherwise all their edits would be dropped.
    """
    searched: dict[str, bool] = {}  # each distinct pattern is searched once per text (NRN601-603 share one)

    def triggered(rule: type[Rule]) -> bool:
        if getattr(rule.triggered_by, "__func__", None) is not _BASE_TRIGGERED_BY:
            return rule.triggered_by(text)  # a rule's own test
        if rule.triggers and not any(word in text for word in rule.triggers):
            return False
        pattern = rule.trigger_pattern
        if not pattern:
            return True
        hit = searched.get(pattern)
        if hit is None:
            hit = searched[pattern] = searcher(pattern)(text)
        return hit

    candidates = [rule for rule in rules if triggered(rule)]
    may_be_in_port = (
        options.all_files
        or options.repo_in_port
        or any(not rule.requires_port_context for rule in candidates)
        or bool(_TARGETS_NEURON.search(text))
    )
    return candidates if may_be_in_port else []


def _port_module(
    module: cst.Module,
    data: bytes,
    text: str,
    path: str,
    options: Options,
    rule_classes: Sequence[type[Rule]],
    python_tree: ast.Module | None = None,
) -> FileResult:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    tree = TreeIndex(module)
    context = FileContext(path=path, text=text, module=module, options=options, wrapper=wrapper, tree=tree, python_tree=python_tree)
    metadata = FileMetadata(context)
    rules = [cls(context) for cls in rule_classes]
    for rule in rules:
        rule.metadata = metadata
    collector = ImportCollector()
    dispatch(tree, [*rules, collector])
    emitted = [code for rule in rule_classes for code in rule.all_codes()]
    suppressions = Suppressions.of(text, emitted)
    unsuppressed = _Unsuppressed(context, suppressions, options.suppress)
    context.edits = unsuppressed.edits(context.edits)
    context.changes = [(change, only) for change, only in context.changes if unsuppressed.keeps(change.code, change.line)]
    backends = backend_scopes(module, metadata[QualifiedNameProvider], path)  # type: ignore[arg-type]
    keep_whole(context, backends, tree.parents)  # a CUDA backend keeps being CUDA's: nothing is ported in it

    in_port = (
        options.all_files
        or options.repo_in_port
        or any(not from_context_rule for _, from_context_rule in context.changes)
        or any(not edit.port_context_only for edit in context.edits)
        or bool(_TARGETS_NEURON.search(text))
    )

    def kept(code: str, context_only: bool) -> bool:
        return options.selects(code) and (in_port or not context_only)

    edits = [edit for edit in context.edits if kept(edit.code, edit.port_context_only)]
    changes = sorted(
        {change for change, context_only in context.changes if kept(change.code, context_only)},
        key=lambda change: (change.line, change.column, change.code, change.message),
    )
    names = metadata[QualifiedNameProvider]

    def unchanged() -> Unchanged:  # the output is the input: verify the tree already indexed
        found = verify_tree(tree, names, context.position, path)  # type: ignore[arg-type]
        return Unchanged(path, findings=_unsuppressed_findings(found, suppressions, options.suppress))

    if not edits:
        return unchanged()

    candidates = [(code, spec) for code, spec, context_only in context.maybe_unused if kept(code, context_only)]
    unused = unsuppressed.edits(unused_import_edits(metadata, collector.found, candidates, edits, tree))
    unused = [edit for edit in unused if backends.holding(edit.target, tree.parents) is None]
    new_module = wrapper.module.visit(_EditApplier([*edits, *unused], tree.parents))
    if unused and (read := still_read(new_module, (spec for _, spec in candidates), tree)):
        # an edit spelled a dropped import's name again: keep that import (see still_read)
        candidates = [(code, spec) for code, spec in candidates if bound_name(spec) not in read]
        unused = unsuppressed.edits(unused_import_edits(metadata, collector.found, candidates, edits, tree))
        unused = [edit for edit in unused if backends.holding(edit.target, tree.parents) is None]
        new_module = wrapper.module.visit(_EditApplier([*edits, *unused], tree.parents))
    edits += unused
    new_module = _add_missing_imports(new_module, edits)
    new_text = _spliced(module, new_module, data, text, python_tree)
    if new_text is not None:  # the original bytes with the rebuilt statements' code put in
        new = new_text.encode(module.encoding)
        if new == data:
            return unchanged()
    else:
        new = new_module.bytes
        if new == data:
            return unchanged()
        restored = _keep_unowned_bytes(data, module.bytes, new)
        if restored is None:
            return Failure(
                path,
                "libcst does not reproduce this file byte for byte (outside the ported code); left as it was",
                kind="parse",
            )
        new = restored
    try:
        new_tree = _parses(new, python_tree is not None)
    except Exception as error:
        return Failure(path, f"internal error: the port did not re-parse ({error}); file left as it was", kind="internal")
    # The output's lines for the verifier's positions: CPython's tree of the spliced text.
    lines = (new_text, new_tree) if new_text is not None and new_tree is not None else (None, None)
    findings = verify_port(new_module, path, had_fallback(tree, names), *lines, original=tree)  # type: ignore[arg-type]
    if findings:  # findings are at lines of the output: its comments
        suppressions = _output_suppressions(text, new_text if new_text is not None else new_module.code, suppressions, emitted)
    findings = _unsuppressed_findings(findings, suppressions, options.suppress)
    return Success(path, old=data, new=new, encoding=module.encoding, changes=tuple(changes), findings=findings)


def _output_suppressions(text: str, output: str, suppressions: Suppressions | None, emitted: list[str]) -> Suppressions | None:
    """The directives the findings answer to: the output's, when the original has directives
    (decided as by a full scan of the original; ``suppressions`` is None also for directives that
    cover nothing porter reports, and then the original is scanned whole only when the output has
    a directive that could cover a finding)."""
    if suppressions is not None:
        return Suppressions.of(output, emitted)
    if not has_candidates(text) or inert(output, emitted):
        return None
    return Suppressions.of(output) if Suppressions.of(text) is not None else None


class _Unsuppressed:
    """The suppression step: drops the edits and changes the file's ``# noqa`` / ``# porter:
    ignore`` comments or its per-file ignores (``codes``) ask porter not to make. When one change
    or edit of a code is suppressed in a statement, every edit of that code there goes with it."""

    def __init__(self, context: FileContext, suppressions: Suppressions | None, codes: tuple[str, ...]) -> None:
        self.context, self.suppressions, self.codes = context, suppressions, codes
        self.dropped: set[tuple[str, int]] = set()
        if suppressions is not None:
            items = [(edit.code, self._line(edit)) for edit in context.edits]
            self.dropped = drop_suppressed([*items, *((c.code, c.line) for c, _ in context.changes)], suppressions)

    def _line(self, edit: Edit) -> int:
        return self.context.position(edit.target)[0]

    def keeps(self, code: str, line: int) -> bool:
        if self.codes and code.startswith(self.codes):
            return False
        suppressions = self.suppressions
        if suppressions is None:
            return True
        return (code, suppressions.statement(line)) not in self.dropped and not suppressions.covers(code, line)

    def edits(self, edits: list[Edit]) -> list[Edit]:
        if self.suppressions is None and not self.codes:
            return edits
        return [edit for edit in edits if self.keeps(edit.code, self._line(edit))]


def _unsuppressed_findings(
    findings: tuple[Finding, ...], suppressions: Suppressions | None, codes: tuple[str, ...]
) -> tuple[Finding, ...]:
    """The verifier's findings minus those on suppressed lines (a code-less finding only under a
    bare ``# noqa``) or of a per-file ignored code."""
    if suppressions is None and not codes:
        return findings
    return tuple(
        finding
        for finding in findings
        if not (codes and finding.code and finding.code.startswith(codes))
        and not (suppressions is not None and suppressions.covers(finding.code or "", finding.line))
    )


def _spliced(module: cst.Module, new_module: cst.Module, data: bytes, text: str, tree: ast.Module | None) -> str | None:
    """The output as the original text with the rebuilt statements' code put in, when the text is
    exactly the file's bytes decoded (no BOM, a known encoding); else None."""
    try:
        if text.encode(module.encoding) != data:
            return None
    except (LookupError, UnicodeError):
        return None
    return spliced(module, new_module, text, tree)


def _keep_unowned_bytes(data: bytes, reproduced: bytes, new: bytes) -> bytes | None:
    """``new`` with the bytes libcst drops put back: a leading form feed and a final lone CR.

    ``reproduced`` is libcst's code for the unedited file. Only a changed file pays for it. Any
    other difference means porter cannot promise to keep every byte it does not own: None.
    """
    if reproduced == data:
        return new
    body = data.lstrip(b"\x0c")
    lead = data[: len(data) - len(body)]
    trail = b""
    if body.endswith(b"\r") and not reproduced.endswith(b"\r"):
        body, trail = body[:-1], b"\r"
    if body != reproduced:
        return None
    return lead + new + trail


def _add_missing_imports(module: cst.Module, edits: Sequence[Edit]) -> cst.Module:
    # libcst's AddImportsVisitor recomputes metadata over the whole module: call it only when a
    # needed import is really missing at the top level.
    present = top_level_imports(module)
    needed = sorted(
        {spec for edit in edits for spec in edit.imports if (spec.module, spec.obj, spec.asname) not in present},
        key=lambda spec: (spec.module, spec.obj or "", spec.asname or ""),
    )
    if not needed:
        return module
    context = CodemodContext()
    for spec in needed:
        AddImportsVisitor.add_needed_import(context, spec.module, spec.obj, spec.asname)
    return AddImportsVisitor(context).transform_module(module)


class EditConflict(Exception):
    """Two edits do not compose: applying one would silently undo part of another."""


def _calls(node: cst.CSTNode, memo: dict[int, tuple[cst.CSTNode, int]]) -> int:
    """Calls in ``node``'s tree. ``memo`` (id -> (node, count); the node keeps its id alive) is
    shared by one applier: a transform's result shares most of its tree with its input, so each
    node is counted once per file, not once per edit above it (3,000 chained ``.cuda()`` calls
    were quadratic here: minutes)."""
    stack: list[tuple[cst.CSTNode, Sequence[cst.CSTNode] | None]] = [(node, None)]
    while stack:
        current, children = stack.pop()
        if id(current) in memo:
            continue
        if children is None:
            children = current.children
            stack.append((current, children))
            stack.extend((child, None) for child in children if id(child) not in memo)
            continue
        count = isinstance(current, cst.Call) + sum(memo[id(child)][1] for child in children)
        memo[id(current)] = (current, count)
    return memo[id(node)][1]


def _with_ancestors(targets: Sequence[cst.CSTNode], parents: Mapping[cst.CSTNode, cst.CSTNode]) -> set[int] | None:
    """The ids of ``targets`` and of every node above them; None when a target is not in the
    indexed tree (then the whole tree is entered)."""
    found: set[int] = set()
    for target in targets:
        current: cst.CSTNode | None = target
        if target not in parents and not isinstance(target, cst.Module):
            return None
        while current is not None and id(current) not in found:
            found.add(id(current))
            current = parents.get(current)
    return found


class _EditApplier(cst.CSTTransformer):
    """Applies edits bottom-up: a node's edits see the node with its children already edited.

    Comment lines above a removed statement usually introduce what follows, so they move to the
    next statement visited (its next sibling, or the statement after its block).
    """

    def __init__(self, edits: Sequence[Edit], parents: Mapping[cst.CSTNode, cst.CSTNode] | None = None) -> None:
        super().__init__()
        self.by_node: dict[int, list[Edit]] = defaultdict(list)
        for edit in edits:
            self.by_node[id(edit.target)].append(edit)
        # The edit targets and their ancestors: only these are entered (libcst rebuilds every node
        # it enters; the rest of the tree is kept as it is, the same objects).
        self.entered = _with_ancestors([edit.target for edit in edits], parents) if parents is not None else None
        for group in self.by_node.values():
            group.sort(key=lambda edit: edit.order)
        self.pending_lines: list[cst.EmptyLine] = []
        self.pending_block = 0  # the block the pending lines were removed from
        self.blocks: list[int] = [0]  # the blocks being visited, innermost last
        self.carried: dict[int, list[cst.EmptyLine]] = {}
        # Codes of the edits applied inside each node being visited (to name them in a conflict).
        self.inside: list[set[str]] = [set()]
        # Blocks whose every statement the port removed, held by id *and* object: they are new
        # nodes, and a freed one's id can be given to a later block (which was then taken for
        # emptied and its `if` deleted: corpus review round 8, H15).
        self.emptied: dict[int, cst.CSTNode] = {}
        self.call_counts: dict[int, tuple[cst.CSTNode, int]] = {}  # see _calls

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.pending_lines and isinstance(node, _STATEMENTS):
            lines = self.pending_lines
            own = getattr(node, "leading_lines", ())
            # A comment above a removed statement that ended its paragraph (a blank line or the end
            # of its block follows) described that statement alone: it goes with it.
            if self.pending_block != self.blocks[-1] or (own and own[0].comment is None):
                lines = [line for line in lines if line.comment is None]
            if lines:
                self.carried[id(node)] = lines
            self.pending_lines = []
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            self.blocks.append(id(node))
        self.inside.append(set())
        return self.entered is None or id(node) in self.entered

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        if isinstance(original_node, (cst.Module, cst.IndentedBlock)):
            self.blocks.pop()
        inner = self.inside.pop()
        result = self._apply(original_node, updated_node, inner)
        self.inside[-1] |= inner
        carried = self.carried.pop(id(original_node), None)
        if carried and isinstance(result, _STATEMENTS):
            result = _prepend_lines(result, carried)
        # A line whose every small statement was removed is a removed line (libcst would print it
        # as `pass` and drop the comments above it).
        if isinstance(result, cst.SimpleStatementLine) and not result.body:
            self._pend(result.leading_lines)
            return cst.RemoveFromParent()
        # A block whose every statement was removed still needs a body.
        if isinstance(result, cst.IndentedBlock) and not result.body:
            result = result.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
            self.emptied[id(result)] = result
        elif isinstance(result, cst.SimpleStatementSuite) and not result.body:
            result = result.with_changes(body=[cst.Pass()])
            self.emptied[id(result)] = result
        elif isinstance(result, cst.If) and self._only_removed(result):
            # `if x:` around nothing but removed statements is noise: it goes too, like them, and
            # so do the comments inside it (they described what was removed). What stood above
            # the `if` moves on as for any removed statement.
            self.pending_lines = []
            self._pend(result.leading_lines)
            return cst.RemoveFromParent()
        return result

    def _pend(self, lines: Sequence[cst.EmptyLine]) -> None:
        """Hold the lines above a removed statement for the next statement visited."""
        self.pending_lines.extend(lines)
        self.pending_block = self.blocks[-1]

    def _only_removed(self, node: cst.If) -> bool:
        return self.emptied.get(id(node.body)) is node.body and node.orelse is None and _pure_test(node.test)

    def _apply(self, original_node: cst.CSTNode, updated_node: cst.CSTNode, inner: set[str]):  # type: ignore[no-untyped-def]
        edits = self.by_node.get(id(original_node))
        if not edits:
            return updated_node
        inner.update(edit.code for edit in edits)
        node: object = updated_node
        removed = False
        before: list[cst.BaseStatement] = []
        after: list[cst.BaseStatement] = []
        comments: list[str] = []
        if any(edit.wraps for edit in edits) and isinstance(node, _STATEMENTS):
            # a wrapping transform keeps the statement's markers on it (Edit.wraps): add them first
            node = _with_comments(node, list(dict.fromkeys(c for edit in edits for c in edit.comments)))
            edits = [edit if not edit.comments else dataclasses.replace(edit, comments=()) for edit in edits]
        for edit in edits:
            if edit.transform is not None and isinstance(node, cst.CSTNode) and not removed:
                node = self._transform(edit, node, inner, self.call_counts)
            # A transform may itself remove the node (an import line with every name dropped).
            removed = removed or edit.remove or isinstance(node, cst.RemovalSentinel)
            before.extend(edit.before)
            after.extend(edit.after)
            comments.extend(c for c in edit.comments if c not in comments)
        if comments and isinstance(node, _STATEMENTS):
            node = _with_comments(node, comments)
        if removed:
            kept_lines = list(getattr(updated_node, "leading_lines", ()))
            replacement = [*before, *after]
            if kept_lines and replacement:
                replacement[0] = _prepend_lines(replacement[0], kept_lines)
            elif kept_lines:
                self._pend(kept_lines)
            return cst.FlattenSentinel(replacement) if replacement else cst.RemoveFromParent()
        if before or after:
            if isinstance(node, cst.FlattenSentinel):
                return cst.FlattenSentinel([*before, *node.nodes, *after])
            return cst.FlattenSentinel([*before, node, *after])  # type: ignore[list-item]
        return node


    @staticmethod
    def _transform(edit: Edit, node: cst.CSTNode, inner: set[str], counts: dict[int, tuple[cst.CSTNode, int]]) -> object:
        """``edit``'s transform of the updated ``node``; refused when it loses a call it does not own."""
        assert edit.transform is not None
        result = edit.transform(node)
        if edit.drops_calls or not isinstance(node, cst.BaseExpression) or not isinstance(result, cst.CSTNode):
            return result
        before, after = _calls(node, counts), _calls(result, counts)
        if after < before:
            others = sorted(inner - {edit.code})
            text = cst.Module([]).code_for_node(node)
            raise EditConflict(
                f"{edit.code} rewrote `{text}` into `{cst.Module([]).code_for_node(result)}`, losing {before - after} call(s)"
                + (f" (edited there by {', '.join(others)})" if others else "")
            )
        return result


_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
# Calls a test may make and still be dropped with its body: queries, not actions.
_QUERY_CALL = ("is_", "has_", "get_rank", "get_world_size", "get_local_rank", "device_count", "isinstance", "hasattr", "len")


def _pure_test(test: cst.BaseExpression) -> bool:
    """Whether evaluating ``test`` has no effect worth keeping: names, attributes, literals,
    comparisons and boolean operators, and calls only of queries (``torch.cuda.is_available()``)."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda)):
            return False
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if not name.startswith(_QUERY_CALL):
                return False
        stack.extend(node.children)
    return True


def _prepend_lines(statement: cst.BaseStatement, lines: Sequence[cst.EmptyLine]) -> cst.BaseStatement:
    """Give ``statement`` the leading lines of a removed statement before it.

    Comments always move; blank lines move only when the statement has none of its own, so
    removing a line never doubles (nor swallows) the blank lines between two blocks.
    """
    own = list(statement.leading_lines)  # type: ignore[attr-defined]
    moved = [line for line in lines if line.comment is not None] if own else list(lines)
    return statement.with_changes(leading_lines=[*moved, *own])


def _with_comments(statement: cst.BaseStatement, comments: Sequence[str]) -> cst.BaseStatement:
    existing = list(statement.leading_lines)  # type: ignore[attr-defined]
    present = {line.comment.value for line in existing if line.comment is not None}
    added = [cst.EmptyLine(indent=True, comment=cst.Comment(text)) for text in comments if text not in present]
    return statement.with_changes(leading_lines=[*existing, *added])


__all__ = ["Change", "migrate_file", "port_source"]


def verify_output(old: bytes, new: bytes, path: str, options: Options) -> tuple[Finding, ...]:
    """The verifier's findings on ``new``: a part of the port of ``old`` that is not porter's whole
    output (a ``--safe-only`` or ``--interactive`` selection). What is written is what is verified."""
    from porter.engine.fastcst.names import LazyQualifiedNames

    original = cst.parse_module(old)
    tree = TreeIndex(original)
    names = LazyQualifiedNames(tree, lambda: MetadataWrapper(original, unsafe_skip_copy=True).resolve(QualifiedNameProvider))  # type: ignore[arg-type]
    module = cst.parse_module(new)
    findings = verify_port(module, path, had_fallback(tree, names))
    return _unsuppressed_findings(findings, Suppressions.of(module.code), options.suppress)
