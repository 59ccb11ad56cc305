"""The prefilter's second stage: the rules' necessary conditions, checked on CPython's tree of a file.

The trigger words and patterns (``core.prefilter``) read the raw text, so a ``def forward``, a
``padding="longest"`` in a docstring or ``half`` in ``half_dim`` sends a file to libcst, which
then leaves it as it was (round 4: 262 of the 414 files of the transformers slice that reached
the parser). CPython's ``ast`` tree of the file is already built before libcst's parse
(``core._too_deep``) and costs a fraction of it. A rule may declare ``Rule.may_edit(facts)``: a
*necessary* condition of its making any edit, read from its matching code (each check's
docstring says why it is necessary). A file goes on to libcst when some candidate rule admits
it — a rule without a check always does — or when the post-port verifier could report something
on it (``verifier_may_find``: the verifier reports on unchanged files too). Otherwise the port's
answer is known without libcst: ``Unchanged(skipped="ast-check")``, the bytes untouched. Only a
file CPython's parser accepts is checked (else libcst's path, as before).

``SourceFacts`` is what the checks read, computed once per file on first use and shared: the
nodes by type (one walk), the identifiers, the string constants, the local names imports bind.
Why an identifier test bounds a qualified-name match: a qualified name the rules match
(``porter.engine.fastcst.names``, or libcst's provider) is built from an import statement
(``import a.b as x``, ``from a import b``; star imports are not resolved) and the attributes
spelled after the imported name, so every part of it is the name of a ``Name``, an attribute,
an imported name or module part, or an alias in the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from porter.engine.options import Options
from porter.rules._lib.device import CUDA_DEVICE
from porter.rules._tables import cuda_only

if TYPE_CHECKING:
    from porter.engine.rule import Rule

NodeT = TypeVar("NodeT", bound=ast.AST)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Statement lists that can hold a def or a class (expressions cannot).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


class SourceFacts:
    """What the rules' checks read about one file, from CPython's tree of it."""

    def __init__(self, text: str, tree: ast.Module, options: Options) -> None:
        self.text, self.tree, self.options = text, tree, options

    @cached_property
    def _by_type(self) -> dict[type, list[ast.AST]]:
        found: dict[type, list[ast.AST]] = {}
        stack: list[ast.AST] = [self.tree]
        children = ast.iter_child_nodes
        while stack:
            node = stack.pop()
            kind = type(node)
            bucket = found.get(kind)
            if bucket is None:
                bucket = found[kind] = []
            bucket.append(node)
            stack.extend(children(node))
        return found

    def of(self, kind: type[NodeT]) -> list[NodeT]:
        """Every node of exactly this type (any order)."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    @cached_property
    def identifiers(self) -> frozenset[str]:
        """Every name the file spells as code: ``Name`` ids, attribute names, the parts of imported
        names and modules, aliases (see the module doc: the parts of any qualified name)."""
        names = {node.id for node in self.of(ast.Name)}
        names.update(node.attr for node in self.of(ast.Attribute))
        for alias in self.of(ast.alias):
            names.update(alias.name.split("."))
            if alias.asname:
                names.add(alias.asname)
        for node in self.of(ast.ImportFrom):
            if node.module:
                names.update(node.module.split("."))
        return frozenset(names)

    @cached_property
    def strings(self) -> frozenset[str]:
        """The values of the file's ``str`` constants (f-strings' literal parts included; an
        implicit concatenation is one value)."""
        return frozenset(node.value for node in self.of(ast.Constant) if isinstance(node.value, str))

    @cached_property
    def imported(self) -> dict[str, set[str]]:
        """Local name -> the dotted names imports anywhere in the file bind it to."""
        bound: dict[str, set[str]] = {}
        for node in self.of(ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                bound.setdefault(local, set()).add(alias.name if alias.asname else local)
        for statement in self.of(ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    prefix = "." * statement.level + (statement.module or "")
                    full = f"{prefix}.{alias.name}" if prefix and not prefix.endswith(".") else prefix + alias.name
                    bound.setdefault(alias.asname or alias.name, set()).add(full)
        return bound

    def spells(self, qualified: str) -> bool:
        """Whether every part of ``qualified`` is an identifier of the file (necessary for any
        node of it to have that qualified name)."""
        return all(part in self.identifiers for part in qualified.split("."))

    def may_name(self, func: ast.expr, last: frozenset[str]) -> bool:
        """Whether ``func`` (a called expression) can have a qualified name ending in one of
        ``last``: an attribute named so, or a name an import binds to such a name."""
        if isinstance(func, ast.Attribute):
            return func.attr in last
        if isinstance(func, ast.Name):
            return any(full.rsplit(".", 1)[-1] in last for full in self.imported.get(func.id, ()))
        return False

    def import_names(self, node: ast.AST) -> set[str]:
        """The qualified names an import can give the Name/Attribute chain ``node`` (its root name
        as any import of the file binds it, then the attributes after it): a superset of what
        ``porter.engine.fastcst.names`` or libcst's provider answer with source IMPORT."""
        text = dotted(node.value if isinstance(node, ast.Starred) else node)
        if text is None:
            return set()
        root, _, rest = text.partition(".")
        return {f"{full}.{rest}" if rest else full for full in self.imported.get(root, ())}

    def methods(self, name: str) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef]]:
        """(def, the nearest class above it) for every def called ``name`` with a class above it."""
        found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef]] = []
        stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(statement, None) for statement in self.tree.body]
        while stack:
            node, owner = stack.pop()
            if isinstance(node, _DEFS) and node.name == name and owner is not None:
                found.append((node, owner))
            inside = node if isinstance(node, ast.ClassDef) else owner
            for block in _BLOCKS:
                stack.extend((child, inside) for child in getattr(node, block, ()))
        return found


def own_nodes(function: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(node, parent) for every node inside ``function`` whose innermost enclosing def or class is
    ``function`` itself (its decorators, parameters and body; not the insides of a def or class
    nested in it)."""
    stack: list[tuple[ast.AST, ast.AST]] = [(child, function) for child in ast.iter_child_nodes(function)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, _OWN_SCOPES):
            continue
        yield node, parent
        stack.extend((child, node) for child in ast.iter_child_nodes(node))


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for item in call.keywords:
        if item.arg == name:
            return item
    return None


def starred(call: ast.Call) -> bool:
    """``f(*a)`` or ``f(**k)``."""
    return any(isinstance(arg, ast.Starred) for arg in call.args) or any(item.arg is None for item in call.keywords)


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for Name/Attribute chains, else None (``rules/_lib/nodes.dotted`` on ``ast``)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# ----------------------------------------------------------------- the verifier's condition
# What porter.engine.verify reports on a file as it is (its module doc), as the names and strings
# each needs: torch.cuda.* / torch.version.cuda / .cuda() ("cuda"), DataParallel, torch.accelerator's
# memory calls, torch.neuron.*, the CUDA-only libraries and calls of rules/_tables/cuda_only.py
# (every part of an entry's prefix: the qualified name starts with it); nvidia-smi run from Python
# (the raw text of the string). Strings (``Verifier._string``, on each literal): a CUDA/NCCL
# environment name (``CUDA_ENV``) anywhere, also as one part of an implicit concatenation (so a
# constant that holds one of its prefixes); a "cuda"/"cuda:N" device or "nccl" only as a setting,
# which a concatenation's part never is (its holder is the concatenation), so the whole literal:
# one constant of exactly that value, or an f-string's first literal part "cuda:"/"cuda".
_VERIFIER_NAMES = frozenset({"cuda", "DataParallel", "data_parallel", "accelerator", "neuron"})
_ENV_PARTS = ("CUDA_", "NCCL_", "NVIDIA_", "NVML_", "CUBLAS", "CUDNN_")


def _verifier_string(value: str) -> bool:
    return value in ("nccl", "cuda:") or bool(CUDA_DEVICE.match(value)) or any(part in value for part in _ENV_PARTS)


def verifier_may_find(facts: SourceFacts) -> bool:
    """Whether ``verify_tree`` could report anything on this file (a necessary condition; the
    test ``tests/test_astcheck.py`` checks it on every fixture and sample)."""
    if facts.identifiers & _VERIFIER_NAMES or cuda_only.NVIDIA_SMI in facts.text:
        return True
    if any(facts.spells(entry.prefix) for entry in cuda_only.ENTRIES):
        return True
    return any(_verifier_string(value) for value in facts.strings)


def _checks(rule: type[Rule]) -> bool:
    from porter.engine.rule import Rule

    return getattr(rule.may_edit, "__func__", None) is not Rule.may_edit.__func__  # type: ignore[attr-defined]


def admitted(text: str, tree: ast.Module, options: Options, rules: Sequence[type[Rule]]) -> bool:
    """Whether the file needs libcst: some rule of ``rules`` (the prefilter's candidates) may edit
    it, or the verifier may report on it."""
    unchecked = [rule for rule in rules if not _checks(rule)]
    if unchecked:
        return True
    facts = SourceFacts(text, tree, options)
    return any(rule.may_edit(facts) for rule in rules) or verifier_may_find(facts)


__all__ = ["SourceFacts", "admitted", "dotted", "keyword", "own_nodes", "starred", "verifier_may_find"]
