"""NRN821: ``HF_DEACTIVATE_ASYNC_LOAD=1`` set after the leading imports, before any weights load."""

from __future__ import annotations

import ast
from typing import ClassVar

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.hostsync.model import CONSTANT
from porter.rules._lib.nodes import dotted, is_docstring

ENV_NAME = "HF_DEACTIVATE_ASYNC_LOAD"
# Importing any of these imports transformers.
_HF_PACKAGES = frozenset({"transformers", "trl", "peft", "optimum"})


def _imported_modules(statement: cst.CSTNode) -> list[str]:
    """Modules a top-level statement imports (looking into top-level try/if blocks)."""
    found: list[str] = []
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Import):
                found += [dotted(alias.name) or "" for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                found.append(dotted(small.module) or "")
    elif isinstance(statement, (cst.Try, cst.If)):
        for inner in statement.body.body:
            found += _imported_modules(inner)
    return found


def _imports_hf(statement: cst.CSTNode) -> bool:
    return any(name.split(".")[0] in _HF_PACKAGES for name in _imported_modules(statement))


def _imports_os(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and any(
            dotted(alias.name) == "os" and alias.asname is None for alias in small.names
        ):
            return True
    return False


def _import_line(statement: cst.CSTNode) -> bool:
    """A line holding one import and nothing else (what the engine's import block is made of)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    )


def _leading_imports(module: cst.Module) -> tuple[int, int]:
    """(start, end) of the module's leading import block: the import lines right after its
    docstring. The engine adds the imports a port needs at the end of this block (libcst's
    AddImportsVisitor), so code placed after it runs after every import, old or added."""
    body = module.body
    start = 1 if body and is_docstring(body[0]) else 0
    end = start
    while end < len(body) and _import_line(body[end]):
        end += 1
    return start, end


def _interval_constant(statement: cst.CSTNode) -> bool:
    """``LOG_INTERVAL = <int>``: the module constant NRN603 adds right after the imports."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    return (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and small.targets[0].target.value == CONSTANT
        and isinstance(small.value, cst.Integer)
    )


def _entry_point(module: cst.Module) -> bool:
    """The module runs as a script: a top-level ``if __name__ == "__main__":``."""
    for statement in module.body:
        if isinstance(statement, cst.If) and isinstance(statement.test, cst.Comparison):
            parts = [statement.test.left, *(t.comparator for t in statement.test.comparisons)]
            if any(isinstance(part, cst.Name) and part.value == "__name__" for part in parts):
                return True
    return False


def _ast_imports_hf(statement: ast.stmt) -> bool:
    """``_imports_hf`` on CPython's tree."""
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in _HF_PACKAGES for alias in statement.names)
    if isinstance(statement, ast.ImportFrom):
        return not statement.level and (statement.module or "").split(".")[0] in _HF_PACKAGES
    if isinstance(statement, (ast.Try, ast.If)):
        return any(_ast_imports_hf(inner) for inner in statement.body)
    return False


def _ast_entry_point(statement: ast.stmt) -> bool:
    """``_entry_point``'s test of one top-level statement, on CPython's tree."""
    if not (isinstance(statement, ast.If) and isinstance(statement.test, ast.Compare)):
        return False
    parts = [statement.test.left, *statement.test.comparators]
    return any(isinstance(part, ast.Name) and part.id == "__name__" for part in parts)


class HfAsyncLoad(Rule):
    """Switch off Transformers' asynchronous weight loading before any weights are loaded.

    What it does:
        In a file that is being ported and imports ``transformers`` (or ``trl``/``peft``/
        ``optimum``, which import it) at module level, inserts
        ``os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")`` right after the file's
        leading imports (the import lines after its docstring; after the ``LOG_INTERVAL``
        constant NRN603 adds there), once, with ``import os`` in front of it unless those
        imports include ``os``; a file that starts with code (a ``try`` around its imports)
        gets the line first. Nothing is inserted when the file already
        names ``HF_DEACTIVATE_ASYNC_LOAD`` or when ``Options.hf_async_load_env`` is False
        (``hf_async_load_env = false`` in ``[tool.porter]``).

    Why:
        Hugging Face's own Neuron SFT reference script sets it ("Disable asynchronous loading
        to avoid hanging", TRL PR #5125): transformers 5's threaded weight materialisation could
        hang with the Neuron runtime. Recent transformers switch async loading off on Neuron by
        themselves, so on those versions the line is harmless. That it is needed on current
        releases is not stated in the AWS Neuron docs (unverified there); ``setdefault`` keeps
        a value the user set in the environment. Transformers reads the variable when it loads
        weights, not when it is imported (``convert_and_load_state_dict_in_model`` in
        ``transformers/core_model_loading.py``, transformers 5.24, the version installed here):
        after the leading imports it is set before any module-level code runs, and the imports
        other rules add in the same pass join that block above it, so one pass places it where
        the rules applied one by one do.

    Before:
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained("gpt2")

    After:
        import torch
        from transformers import AutoModelForCausalLM
        import os
        os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")

        model = AutoModelForCausalLM.from_pretrained("gpt2")

    Safety:
        Safe: weights load sequentially (slower start-up for very large checkpoints, same
        weights). Only module-level imports are seen: a file that imports transformers only
        inside a function, or only through another module of the project, gets nothing. A
        project module imported in the leading block that loads weights while it is imported
        loads them before the line (set the variable in the launcher there).
        Runs only in files that are being ported; in a repository port (``repo_in_port``) only
        in entry scripts (a top-level ``if __name__ == "__main__":``): the variable matters once
        per process, before its first weight load, not in every library module.
    """

    code: ClassVar[str] = "NRN821"
    name: ClassVar[str] = "hf-async-load"
    summary: ClassVar[str] = 'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1") after the leading imports of a transformers script'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("transformers", "trl", "peft", "optimum")
    # An import statement of one of them: at the start of a line or after a ';' (not `>>> from transformers` in a docstring).
    trigger_pattern: ClassVar[str] = r"(?:^|[\r\n;])[\s\\\ufeff]*(?:from[\s\\]+|import\b(?:[^\r\n;#\\]|\\\r?\n|\\\r)*?\b)(?:transformers|trl|peft|optimum)\b"
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 90

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """``visit_Module``'s own conditions on CPython's tree: the option on, the name not in
        the text, an entry point in a repository port (a top-level ``if`` comparing ``__name__``),
        and a top-level import of an HF package (also in the bodies of top-level ``try``/``if``
        blocks, as ``_imported_modules`` looks; ``ast`` also sees one-line ``if x: import y``
        bodies, which libcst's walk skips: more files, never fewer)."""
        options = facts.options
        if not options.hf_async_load_env or ENV_NAME in facts.text:
            return False
        body = facts.tree.body
        if options.repo_in_port and not any(_ast_entry_point(statement) for statement in body):
            return False
        return any(_ast_imports_hf(statement) for statement in body)

    def visit_Module(self, node: cst.Module) -> None:
        if not self.options.hf_async_load_env or ENV_NAME in self.context.text:
            return
        if self.options.repo_in_port and not _entry_point(node):
            return  # a repository port: set once where the process starts, not in every library module
        if not any(_imports_hf(statement) for statement in node.body):
            return
        start, end = _leading_imports(node)
        lines = [] if any(_imports_os(statement) for statement in node.body[start:end]) else [cst.parse_statement("import os\n")]
        lines.append(cst.parse_statement(f'os.environ.setdefault("{ENV_NAME}", "1")\n'))
        message = f"{ENV_NAME}=1 set before Transformers loads weights (sequential weight loading)"
        # Past NRN603's LOG_INTERVAL too: that rule adds it right after the imports as well, so
        # it stays above this line in one pass and with the rules applied one by one alike.
        at = end
        while at < len(node.body) and _interval_constant(node.body[at]):
            at += 1
        if at < len(node.body):
            # The statement's own comment lines stay with it; the new lines go right above them.
            self.insert_before(node.body[at], lines, message)
        else:
            self.insert_after(node.body[at - 1], lines, message)
