"""``--git-branch NAME``: per git repository, a branch ``NAME`` with the port committed.

Files are written only after the whole batch (``finish``), one repository at a time: create the
branch, write each ported file atomically, commit exactly those files (``run.gitops``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from porter.engine.results import Failure, FileResult, Success
from porter.run.sinks import Item, Outputs, Sink
from porter.run.sinks.inplace import write_result


class GitBranch(Sink):
    def __init__(self, branch: str, repos: Sequence[str], outputs: Outputs) -> None:
        self.branch = branch
        self.repos = list(repos)
        self.outputs = outputs
        self.pending: dict[str, list[Success]] = {}

    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        if isinstance(result, Success):
            self.pending.setdefault(item.repo, []).append(result)
        return result

    def finish(self) -> None:
        from porter.run.gitops import GitError, commit, commit_message, create_branch

        summaries = _code_summaries()
        for repo in self.repos:
            successes = self.pending.get(repo, [])
            if not successes:
                self.outputs.say(f"{repo}: nothing to port; no branch created")
                continue
            try:
                create_branch(repo, self.branch)
            except GitError as error:
                self.outputs.fail(repo, f"porter: error: {error}")
                continue
            written: list[str] = []
            for success in successes:
                result = write_result(success, success.path)
                if isinstance(result, Failure):
                    self.outputs.fail(success.path, result.line())
                else:
                    written.append(os.path.relpath(os.path.abspath(success.path), repo))
            if not written:
                continue
            changes = [change for success in successes for change in success.changes]
            try:
                sha = commit(repo, written, commit_message(changes, len(written), summaries))
            except GitError as error:
                self.outputs.fail(repo, f"porter: error: {error}")
                continue
            self.outputs.say(f"{repo}: committed the port on branch {self.branch} ({sha[:12]}, {len(written)} files)")


def _code_summaries() -> dict[str, str]:
    from porter.engine.registry import catalogue

    return {code: info.summary for code, info in catalogue().items()}
