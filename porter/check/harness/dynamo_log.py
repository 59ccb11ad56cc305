"""Graph breaks and recompiles, read from Dynamo's own logs (``TORCH_LOGS=graph_breaks,recompiles``).

Dynamo writes one record per graph break ("Graph break in user code at FILE:LINE / Graph Break
Reason: ...") and per recompile ("Recompiling function F in FILE:LINE / triggered by the following
guard failure(s): - 0/0: ..."). A handler on the ``torch._dynamo`` logger parses them into the state,
stamped with the optimizer step they happened at.
"""

from __future__ import annotations

import logging
import os
import re

from porter.check.harness.state import STATE, in_library, project_frame, user_location

_BREAK = re.compile(r"Graph break .*?in user code at (.+?):(\d+)")
# the whole reason: its first line, Explanation and Hints, up to the user code traceback
_REASON = re.compile(r"Graph Break Reason: (.+?)(?:\n\s*User code traceback:|\Z)", re.S)
_RECOMPILE = re.compile(r"Recompiling function (\S+) in (.+?):(\d+)")
_GUARD = re.compile(r"^\s*-\s*(\d+/\d+): (.+)$", re.M)


class DynamoLogHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log record must never break the run
            return
        # Dynamo names the frame it compiled; when that is torch's own wrapper (a compiled
        # nn.Module's call), the user's line is the one calling into it right now.
        here_file, here_line = user_location()
        if "__graph_breaks" in record.name:
            match = _BREAK.search(message)
            reason = _REASON.search(message)
            file, line = (match.group(1), int(match.group(2))) if match else (here_file, here_line)
            if _harness(file):
                # the harness's own hook (its optimizer-step counter writes the progress file) traced
                # inside the script's compiled code: a break a device run, with no harness, does not have
                return
            if _internal(file):
                file, line = here_file, here_line
            STATE.graph_breaks.append(
                {
                    "file": file,
                    "line": line,
                    "reason": _full_reason(reason.group(1)) if reason else message.splitlines()[0][:300],
                    "step": STATE.steps,
                    # the script's own line that called into the library where the break is
                    "via": project_frame(),
                }
            )
        elif "__recompiles" in record.name and "verbose" not in record.name:
            match = _RECOMPILE.search(message)
            guards = _GUARD.findall(message)
            file, line = (match.group(2), int(match.group(3))) if match else (here_file, here_line)
            frame = f"{match.group(1)} at {os.path.basename(file)}:{line}" if match else None
            # a library's compiled wrapper (transformers' generic.py) says little: prefer the user's
            # call into it when the user's own code is on the stack
            if _internal(file) or (in_library(file) and not in_library(here_file)):
                file, line = here_file, here_line
            STATE.recompiles.append(
                {
                    "function": frame or (match.group(1) if match else None),
                    "file": file,
                    "line": line,
                    "reason": "; ".join(f"{cid}: {why}" for cid, why in guards) or message[:300],
                    "step": STATE.steps,
                    # the compiled function running (torch.compile of a function), and whether in its first call
                    "caller": STATE.compiled_calls[-1][0] if STATE.compiled_calls else None,
                    "first_call": STATE.compiled_calls[-1][0] if STATE.compiled_calls and STATE.compiled_calls[-1][1] else None,
                    "via": project_frame(),
                }
            )


def _full_reason(text: str) -> str:
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    return "\n".join(ln for ln in lines if ln.strip())[:2000]


def _harness(path: str) -> bool:
    return "/porter/check/harness/" in path.replace(os.sep, "/")


def _internal(path: str) -> bool:
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return path.startswith(torch_dir) or "/porter/check/" in path.replace(os.sep, "/")


def install() -> None:
    import torch

    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    handler = DynamoLogHandler()
    logging.getLogger("torch._dynamo").addHandler(handler)
