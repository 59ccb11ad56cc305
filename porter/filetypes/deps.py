"""Dependency pins: requirements files, pyproject.toml, setup.cfg, setup.py, conda environments.

Every kind is read into *items* (one requirement string each, with its line and column) and the
same port runs on them: CUDA local versions dropped (NRN990), torch re-pinned to a TorchNeuron
release when its pin has none (NRN991), ``torch-neuronx`` added after torch (NRN992), CUDA wheel
indexes pointed at the CPU index (NRN993), CUDA-only packages commented out or marked (NRN994),
companion pins of a re-pinned torch marked (NRN995).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from porter.engine.changes import Safety
from porter.filetypes import _pins, _tomlpos, _yamlpos
from porter.filetypes._doc import Doc
from porter.filetypes._pins import FAMILIES, Requirement
from porter.filetypes._tree import Node

_HAS_NEURON = re.compile(r"torch[-_.]neuronx", re.IGNORECASE)
_HASHED = re.compile(r"--hash[=\s]")
_OPTION = re.compile(r"^\s*(--extra-index-url|--index-url|-i|--find-links|-f)\b")


@dataclass(frozen=True)
class Item:
    """One requirement string in a file: ``start`` is the column of its first character."""

    line: int
    start: int
    req: Requirement
    quote: str = ""  # the string's quote character in TOML/Python; "" for a whole-line requirement
    alone: bool = True  # nothing else on the line (so it may be commented out or followed by a line)

    @property
    def end(self) -> int:
        return self.start + len(self.req.text)


@dataclass(frozen=True)
class Layout:
    """How a kind writes a new requirement line (and, where it can, an index option)."""

    new_item: Callable[[str, str], str]  # (indent, requirement) -> line body
    index_item: Callable[[str, str], str] | None = None  # (indent, url) -> line body


LINE_LAYOUT = Layout(lambda indent, text: indent + text, lambda indent, url: f"{indent}--extra-index-url {url}")


def quoted_layout(quote: str) -> Layout:
    return Layout(lambda indent, text: f"{indent}{quote}{text}{quote},")


def default_family(doc: Doc) -> str:
    """The torch-neuronx family for a re-pin: ``Options.extra`` ``torch_family`` or the newest."""
    chosen = dict(doc.options.extra).get("torch_family", _pins.DEFAULT_FAMILY)
    return chosen if chosen in FAMILIES else _pins.DEFAULT_FAMILY


# ---------------------------------------------------------------------------- shared item port
def port_items(doc: Doc, items: list[Item], layout: Layout) -> None:
    if _HASHED.search(doc.text):
        _port_hashed(doc, items)
        return
    torch = next((item for item in items if item.req.key == "torch" and not item.req.is_url), None)
    family: str | None = None
    repinned = False
    if torch is not None:
        family, repinned = _port_torch(doc, torch, default_family(doc))
    for item in items:
        if item.req.is_url:
            if re.search(r"cu\d{3}|cuda", item.req.text):
                doc.mark(item.line, "NRN990", "a CUDA wheel by URL: use a plain pin (torch==X) instead")
            continue
        if item is not torch:
            _drop_local(doc, item)
        if repinned and item.req.key in _pins.COMPANIONS and item.req.exact_version() is not None:
            doc.mark(
                item.line,
                "NRN995",
                f"{item.req.name} is pinned for the old torch; pin the release built for torch {FAMILIES[family or '']}",
            )
    _port_cuda_only_items(doc, items)
    if torch is not None and family is not None and not _HAS_NEURON.search(doc.text):
        _add_neuron(doc, torch, family, layout)


def _port_hashed(doc: Doc, items: list[Item]) -> None:
    """A hash-locked file (``--hash=``): any version edit breaks its hashes, so only markers."""
    for item in items:
        family, repin = _pins.family_for(item.req, default_family(doc)) if item.req.key == "torch" else (None, False)
        if item.req.local_cuda_spans() or repin:
            target = f"torch=={FAMILIES[family]} and " if repin and family else ""
            doc.mark(item.line, "NRN990", f"hash-locked CUDA pin: regenerate the lock file with {target}no +cuXXX builds")
        if item.req.key == "torch" and not _HAS_NEURON.search(doc.text):
            pin = _pins.neuron_pin(family or default_family(doc))
            doc.mark(item.line, "NRN992", f"regenerate the lock file with {pin} (Neuron package repository, not PyPI)")
    _port_cuda_only_items(doc, items)


def _port_torch(doc: Doc, item: Item, default: str) -> tuple[str | None, bool]:
    req = item.req
    family, repin = _pins.family_for(req, default)
    if family is None:
        doc.mark(
            item.line,
            "NRN991",
            f"torch{req.spec.strip()} admits no TorchNeuron release: allow torch 2.13.0 or 2.14.0",
        )
        _drop_local(doc, item)
        return None, False
    if repin and doc.wants("NRN991"):
        target = FAMILIES[family]
        version = re.match(r"(\s*===?\s*)(\S+)", req.spec)  # exact pins only reach here
        if version is None:
            _drop_local(doc, item)
            return family, False
        doc.replace_span(
            item.line,
            item.start + req.spec_start + version.end(1),
            item.start + req.spec_start + version.end(2),
            target,
            "NRN991",
            f"torch{req.spec.strip()} has no TorchNeuron build: pinned torch=={target} (torch-neuronx {family}.x); "
            "check the code and the other pins against it",
            Safety.REVIEW,
        )
        if req.local_cuda_spans() and doc.wants("NRN990"):
            doc.record(item.line, item.start + req.spec_start, "NRN990", _local_message(req), Safety.SAFE)
        return family, True
    _drop_local(doc, item)
    return family, False


def _local_message(req: Requirement) -> str:
    suffixes = ", ".join(sorted({req.text[s:e] for s, e in req.local_cuda_spans()}))
    return f"{req.name}: dropped the CUDA build suffix {suffixes}; the plain release pin"


def _drop_local(doc: Doc, item: Item) -> None:
    spans = item.req.local_cuda_spans()
    for index, (start, end) in enumerate(spans):
        message = _local_message(item.req) if index == 0 else None
        doc.replace_span(item.line, item.start + start, item.start + end, "", "NRN990", message, Safety.SAFE)


def _port_cuda_only_items(doc: Doc, items: list[Item]) -> None:
    """Comment out removable CUDA-only requirements; one marker per line for the others."""
    marked: dict[int, list[tuple[str, _pins.CudaOnly]]] = {}
    for item in items:
        entry = _pins.cuda_only(item.req.name)
        if entry is None:
            continue
        if not _port_cuda_only(doc, item, entry):
            marked.setdefault(item.line, []).append((item.req.name, entry))
    for line, found in marked.items():
        if len(found) == 1:
            doc.mark(line, "NRN994", found[0][1].message)
        else:
            names = ", ".join(name for name, _ in found)
            doc.mark(line, "NRN994", f"{names}: CUDA-only packages; drop them on Trainium (see porter explain NRN994)")


def _port_cuda_only(doc: Doc, item: Item, entry: _pins.CudaOnly) -> bool:
    """Comment the requirement out when it is removable and alone on its line; False: mark it."""
    removable = entry.remove and item.alone and not doc.body(item.line).rstrip().endswith("\\")
    if not removable or not doc.wants("NRN994"):
        return False
    message = f"{item.req.name} commented out: {entry.message}"
    if not doc.has_marker(item.line, "NRN994"):
        doc.insert_before(item.line, [doc.indent_of(item.line) + doc.marker_text("NRN994", entry.message)])
    doc.edit_line(item.line, lambda body: _comment_out(body, doc.comment), "NRN994", message, Safety.REVIEW)
    return True


def _comment_out(body: str, comment: str) -> str:
    stripped = body.lstrip()
    return f"{body[: len(body) - len(stripped)]}{comment} {stripped}"


def _add_neuron(doc: Doc, torch: Item, family: str, layout: Layout) -> None:
    if not doc.wants("NRN992"):
        return
    pin = _pins.neuron_pin(family)
    message = (
        f"added {pin}, the Neuron backend for torch {FAMILIES[family]}; it installs from the Neuron "
        "package repository, not PyPI (PyPI has only a placeholder)"
    )
    indent = doc.indent_of(torch.line)
    notes = [f"{indent}{doc.comment} {_pins.NEURON_COMMENT}", f"{indent}{doc.comment} {_pins.FRESH_ENV_COMMENT}"]
    if torch.alone:
        lines = list(notes)
        if layout.index_item is not None:
            lines.append(layout.index_item(indent, _pins.NEURON_INDEX))
        lines.append(layout.new_item(indent, pin))
        if torch.quote and not doc.body(torch.line)[torch.end + 1 :].lstrip().startswith(","):
            doc.replace_span(torch.line, torch.end + 1, torch.end + 1, ",", "NRN992", None)
        last = torch.line
        while last + 1 < len(doc) and doc.body(last).rstrip().endswith("\\"):
            last += 1  # after the whole continued requirement, never inside it
        doc.insert_after(last, lines)
        doc.record(torch.line, torch.start, "NRN992", message, Safety.REVIEW)
    elif torch.quote:
        after = torch.end + 1  # just past the closing quote
        if doc.replace_span(torch.line, after, after, f", {torch.quote}{pin}{torch.quote}", "NRN992", message, Safety.REVIEW):
            doc.insert_before(torch.line, notes)
    else:
        doc.mark(torch.line, "NRN992", f"add {pin} (Neuron package repository, not PyPI), in a fresh environment")


# ---------------------------------------------------------------------------- requirements.txt
def port_requirements_txt(doc: Doc) -> None:
    items: list[Item] = []
    for index in range(len(doc)):
        body = doc.body(index)
        stripped = body.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _OPTION.match(body):
            port_index_option(doc, index)
            continue
        indent = len(body) - len(body.lstrip())
        req = _pins.parse(body[indent:])
        if req is not None:
            items.append(Item(index, indent, req))
        elif _pins.CUDA_INDEX.search(body) or "+cu" in body:
            doc.mark(index, "NRN990", "a CUDA wheel by URL: use a plain pin (torch==X) instead")
    port_items(doc, items, LINE_LAYOUT)


def port_index_option(doc: Doc, index: int, code_column: int = 0) -> None:
    """A pip index option: a CUDA wheel index becomes the CPU index; an NVIDIA index is commented out."""
    body = doc.body(index)
    for match in _pins.CUDA_INDEX.finditer(body):
        doc.replace_span(
            index,
            match.start(2),
            match.end(2),
            "cpu",
            "NRN993",
            f"CUDA wheel index {match.group(2)} -> cpu: the torch that torch-neuronx runs on is the CPU build",
            Safety.REVIEW,
        )
    if _pins.NVIDIA_INDEX.search(body) and body.lstrip().startswith("-") and doc.wants("NRN993"):
        if not doc.has_marker(index, "NRN993"):
            doc.insert_before(index, [doc.indent_of(index) + doc.marker_text("NRN993", "NVIDIA package index, not used on Trainium")])
        doc.edit_line(
            index,
            lambda line: _comment_out(line, doc.comment),
            "NRN993",
            "NVIDIA package index commented out: nothing on it runs on Trainium",
            Safety.REVIEW,
        )


# ---------------------------------------------------------------------------- TOML / Python strings
def string_item(doc: Doc, node: Node) -> Item | None:
    """An ``Item`` for a one-line quoted string node holding a requirement."""
    if node.kind != "scalar" or node.style not in ('"', "'") or not node.single_line or not isinstance(node.value, str):
        return None
    line, column = node.start
    if doc.body(line)[column + 1 : node.end[1] - 1] != node.value:
        return None  # escapes inside: columns would not match the value
    req = _pins.parse(node.value)
    if req is None:
        return None
    body = doc.body(line)
    before, after = body[:column].strip(), body[node.end[1] :].strip()
    alone = before == "" and (after in ("", ",") or after.startswith("#") or re.match(r",\s*#", after) is not None)
    return Item(line, column + 1, req, node.style, alone)


def port_cuda_urls(doc: Doc, root: Node) -> None:
    """CUDA wheel index URLs in any string of a TOML document (uv/pdm/poetry sources)."""
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(v for _, v in node.items)
        stack.extend(node.elements)
        if node.kind == "scalar" and isinstance(node.value, str) and node.single_line:
            match = _pins.CUDA_INDEX.search(node.value)
            if match and node.style in ('"', "'"):
                line, column = node.start
                doc.replace_span(
                    line,
                    column + 1 + match.start(2),
                    column + 1 + match.end(2),
                    "cpu",
                    "NRN993",
                    f"CUDA wheel index {match.group(2)} -> cpu: the torch that torch-neuronx runs on is the CPU build",
                    Safety.REVIEW,
                )


def port_pyproject(doc: Doc) -> None:
    root = _tomlpos.parse(doc.source)
    arrays: list[Node] = []
    project = root.get("project")
    if project is not None and project.kind == "map":
        arrays.append(project.get("dependencies") or Node("seq", (0, 0), (0, 0)))
        extras = project.get("optional-dependencies")
        if extras is not None and extras.kind == "map":
            arrays.extend(v for _, v in extras.items)
    groups = root.get("dependency-groups")
    if groups is not None and groups.kind == "map":
        arrays.extend(v for _, v in groups.items)
    items: list[Item] = []
    quote = '"'
    for array in arrays:
        if array.kind != "seq":
            continue
        for element in array.elements:
            item = string_item(doc, element)
            if item is not None:
                items.append(item)
                quote = item.quote if item.req.key == "torch" else quote
    port_items(doc, items, quoted_layout(quote))
    _port_poetry(doc, root)
    port_cuda_urls(doc, root)


def _port_poetry(doc: Doc, root: Node) -> None:
    poetry = root.get("tool")
    poetry = poetry.get("poetry") if poetry is not None and poetry.kind == "map" else None
    if poetry is None or poetry.kind != "map":
        return
    tables = [poetry.get("dependencies")]
    group = poetry.get("group")
    if group is not None and group.kind == "map":
        tables.extend(v.get("dependencies") for _, v in group.items if v.kind == "map")
    for table in tables:
        if table is None or table.kind != "map":
            continue
        for key, value in table.items:
            version = value.get("version") if value.kind == "map" else value
            if version is not None and version.kind == "scalar":
                _poetry_local(doc, version, str(key.value))
            entry = _pins.cuda_only(str(key.value))
            if entry is not None:
                doc.mark(key.start[0], "NRN994", entry.message)
            if str(key.value) == "torch" and not _HAS_NEURON.search(doc.text):
                doc.mark(
                    key.start[0],
                    "NRN992",
                    "add torch-neuronx (2.13.x for torch 2.13.0, 2.14.x for 2.14.0) from the Neuron package repository as a poetry source",
                )


def _poetry_local(doc: Doc, version: Node, name: str) -> None:
    if version.style not in ('"', "'") or not version.single_line or not isinstance(version.value, str):
        return
    line, column = version.start
    for match in re.finditer(r"\+cu(?:da)?\d[\d.]*", version.value):
        doc.replace_span(
            line,
            column + 1 + match.start(),
            column + 1 + match.end(),
            "",
            "NRN990",
            f"{name}: dropped the CUDA build suffix {match.group()}; the plain release pin",
            Safety.SAFE,
        )


# ---------------------------------------------------------------------------- setup.cfg
_CFG_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
_CFG_KEY = re.compile(r"^([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$")


def port_setup_cfg(doc: Doc) -> None:
    items: list[Item] = []
    section = ""
    collecting = False
    for index in range(len(doc)):
        body = doc.body(index)
        stripped = body.strip()
        if (header := _CFG_SECTION.match(body)) is not None:
            section, collecting = header.group(1).strip(), False
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if not body[0].isspace():
            key = _CFG_KEY.match(body)
            collecting = bool(key) and (
                (section == "options" and key is not None and key.group(1) in ("install_requires", "setup_requires"))
                or section == "options.extras_require"
            )
            if collecting and key and key.group(2).strip():
                value_column = key.start(2)
                req = _pins.parse(body[value_column:])
                if req is not None:
                    items.append(Item(index, value_column, req, alone=False))
            continue
        if collecting:
            indent = len(body) - len(body.lstrip())
            req = _pins.parse(body[indent:])
            if req is not None:
                items.append(Item(index, indent, req))
    port_items(doc, items, Layout(lambda indent, text: indent + text))


# ---------------------------------------------------------------------------- conda environment.yml
_CONDA_SPEC = re.compile(r"^(?:(?P<channel>[\w.-]+)::)?(?P<name>[A-Za-z0-9][\w.-]*)(?P<rest>.*)$")
_CONDA_TORCH = frozenset({"pytorch", "torch", "pytorch-gpu", "pytorch-cpu"})


def port_conda(doc: Doc) -> None:
    for document in _yamlpos.parse_all(doc.source):
        if document.kind != "map":
            continue
        channels = document.get("channels")
        if channels is not None and channels.kind == "seq":
            for element in channels.elements:
                if element.kind == "scalar" and element.value == "nvidia":
                    doc.mark(element.start[0], "NRN993", "the nvidia channel serves CUDA packages only; remove it")
        dependencies = document.get("dependencies")
        if dependencies is None or dependencies.kind != "seq":
            continue
        pip_items: list[Item] = []
        for element in dependencies.elements:
            if element.kind == "scalar" and isinstance(element.value, str):
                _port_conda_spec(doc, element)
            elif element.kind == "map" and (pip := element.get("pip")) is not None and pip.kind == "seq":
                pip_items.extend(_conda_pip_items(doc, pip))
        dash_layout = Layout(lambda indent, text: f"{indent}- {text}", lambda indent, url: f"{indent}- --extra-index-url {url}")
        port_items(doc, pip_items, dash_layout)


def _conda_pip_items(doc: Doc, pip: Node) -> list[Item]:
    items: list[Item] = []
    for element in pip.elements:
        if element.kind != "scalar" or not isinstance(element.value, str) or not element.single_line:
            continue
        line, column = element.start
        if element.value.startswith("-"):
            port_index_option(doc, line)
            continue
        offset = 1 if element.style in ('"', "'") else 0
        req = _pins.parse(element.value)
        if req is not None and doc.body(line)[column + offset :].startswith(element.value):
            # quote "": a YAML list item takes no comma, whatever its quoting
            items.append(Item(line, column + offset, req, "", _dash_alone(doc, line, column)))
    return items


def _dash_alone(doc: Doc, line: int, column: int) -> bool:
    return doc.body(line)[:column].strip() == "-"


def _port_conda_spec(doc: Doc, element: Node) -> None:
    match = _CONDA_SPEC.match(element.value) if isinstance(element.value, str) else None
    if match is None or not element.single_line:
        return
    line, column = element.start
    name = match.group("name").lower()
    entry = _pins.cuda_only(name)
    if entry is not None:
        req = _pins.parse(match.group("name") + (match.group("rest") or ""))
        if req is not None:
            conda_item = Item(line, column, req, element.style, _dash_alone(doc, line, column))
            if not _port_cuda_only(doc, conda_item, entry):
                doc.mark(line, "NRN994", entry.message)
    elif name in _CONDA_TORCH:
        doc.mark(
            line,
            "NRN991",
            "conda pytorch is a CUDA/CPU build: install torch==2.14.0 and torch-neuronx 2.14.x with pip "
            "(Neuron package repository) instead",
        )
    if "cuda" in (match.group("rest") or "") and entry is None and name not in _CONDA_TORCH:
        doc.mark(line, "NRN990", f"{name}: a CUDA build string; use the plain build")
