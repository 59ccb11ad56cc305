"""The file the host-sync analysis reads: its tree index, functions and methods, and the
questions every part of the analysis asks (which function holds a node, is it per-step, is a
call a logging call)."""

from __future__ import annotations

import re

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import Rule
from porter.rules._lib.hostsync.model import LOG_FUNCTIONS, LOG_HELPER, LOG_METHODS, StepLoop
from porter.rules._lib.hostsync.syntax import ends_loop_or_function, is_interval_test
from porter.rules._lib.nodes import dotted, method_name
from porter.rules._lib.tree import child_index

# Logging functions of libraries, by qualified name (``import wandb as wb``; ``wb.log(...)``).
_LOG_APIS = ("wandb.log", "logging.info", "logging.debug", "logging.warning", "mlflow.log_metric", "mlflow.log_metrics")


class FileScope:
    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.module = rule.context.module
        self.index: TreeIndex = child_index(rule)
        self.parents = self.index.parents
        # Functions of this file by name, and methods by (class, name): calls the loops may follow.
        self.functions: dict[str, cst.FunctionDef] = {
            s.name.value: s for s in self.module.body if isinstance(s, cst.FunctionDef)
        }
        self.methods: dict[tuple[str, str], cst.FunctionDef] = {}
        for node in self.index.find(self.module, cst.ClassDef):
            if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
                for item in node.body.body:
                    if isinstance(item, cst.FunctionDef):
                        self.methods[(node.name.value, item.name.value)] = item

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def within(self, node: cst.CSTNode, root: cst.CSTNode) -> bool:
        """``node`` is ``root`` or under it."""
        current: cst.CSTNode | None = node
        while current is not None:
            if current is root:
                return True
            current = self.parent(current)
        return False

    def is_variable(self, name: cst.Name) -> bool:
        """A variable, not an attribute's name (``x.loss``) or a keyword argument's (``f(loss=...)``)."""
        parent = self.parent(name)
        return not ((isinstance(parent, cst.Attribute) and parent.attr is name) or (isinstance(parent, cst.Arg) and parent.keyword is name))

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.FunctionDef):
                return current
            current = self.parent(current)
        return None

    def class_of(self, node: cst.CSTNode) -> str | None:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.ClassDef):
                return current.name.value
            current = self.parent(current)
        return None

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def is_log_call(self, call: cst.Call) -> bool:
        if self.rule.matches(call.func, *_LOG_APIS):
            return True
        if isinstance(call.func, cst.Name):
            return call.func.value in LOG_FUNCTIONS or bool(LOG_HELPER.match(call.func.value))
        name = method_name(call)
        if name is not None and name.endswith("print"):
            return True  # xm.master_print, accelerator.print
        if name not in LOG_METHODS:
            return False
        receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None  # type: ignore[union-attr]
        if name in {"log", "info", "debug"}:
            # logger.info / logging.info / wandb.log / accelerator.log / self.log
            return receiver is not None and bool(re.search(r"(?i)(log|wandb|accelerator|run|self|tracker)", receiver))
        return True

    def log_statement(self, statement: cst.CSTNode) -> cst.Call | None:
        """The logging call a one-call statement line makes (``print(...)``, ``pbar.set_postfix(...)``)."""
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and self.is_log_call(small.value):
                return small.value
        return None

    def per_step(self, statement: cst.CSTNode, step_loop: StepLoop) -> bool:
        """``statement`` runs on every iteration of ``step_loop`` (no interval or one-shot branch between)."""
        current = self.parent(statement)
        child: cst.CSTNode = statement
        while current is not None and current is not step_loop.node:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(current, cst.If) and child is current.body:
                if is_interval_test(self.index, current.test) or ends_loop_or_function(current.body, self.rule):
                    return False
            child, current = current, self.parent(current)
        return current is step_loop.node

    def inside_nested_loop(self, node: cst.CSTNode, body: cst.CSTNode) -> bool:
        current = self.parent(node)
        while current is not None and current is not body:
            if isinstance(current, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return True
            current = self.parent(current)
        return False
