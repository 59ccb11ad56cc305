"""Ports of files that are not Python: dependency pins, launchers, configs, containers.

Public API (the engine's contract for non-Python files):

- ``handles(path) -> bool``: whether ``path`` is one of the kinds below (by name; an extensionless
  file is read for a shell shebang).
- ``migrate_file(path, options, display_path)``: the same for a file on disk (read like the
  Python engine reads: links and special files refused).
- ``port_file(path, data, options) -> FileResult``: ``Success``/``Unchanged``/``Failure`` exactly
  like the Python engine; never raises for a bad file. ``setup.py`` is ported here only when
  called explicitly (``handles`` says False: it is Python, the Python engine owns it);
  ``chain_setup_py(path, data, python_result, options)`` merges it into the engine's result.
- ``FILE_CODES`` (code -> summary) and ``explain(code)`` (What it does / Why / Before / After /
  Safety) for ``porter rules`` / ``porter explain``.

Every port is a set of targeted line edits guided by a parse (``_doc.Doc``): comments, layout,
line endings, a BOM and untouched bytes stay as they were; the output is re-parsed before it is
returned; a second run changes nothing.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from types import ModuleType

from porter.engine.options import Options
from porter.engine.results import Failure, FileResult, Success, Unchanged
from porter.engine.textio import port_from_disk
from porter.filetypes import _jsonpos, _tomlpos, _yamlpos, configs, deps, shell
from porter.filetypes._codes import DOCS, FILE_CODES
from porter.filetypes._doc import DecodeError, Doc, decode
from porter.filetypes._tree import Node, ParseError

__all__ = ["FILE_CODES", "chain_setup_py", "explain", "handles", "kind_of", "migrate_file", "port_file"]

# Folders whose files are tooling, not the training job (CI, editors).
_SKIPPED_PARTS = frozenset({".github", ".gitlab", ".circleci", ".vscode", ".idea", "node_modules", ".devcontainer"})
_NOT_CONFIGS = frozenset(
    {
        "package.json", "package-lock.json", "tsconfig.json", "jsconfig.json", "composer.json", "renovate.json",
        "cargo.toml", "ruff.toml", "pixi.lock", "mkdocs.yml", "mkdocs.yaml", "codecov.yml", "codecov.yaml",
        "docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml", "citation.cff",
        # Hugging Face checkpoint files: they describe saved weights, not how to train
        "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
        "vocab.json", "preprocessor_config.json", "adapter_config.json",
    }
)
_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("requirements", ("*requirements*.txt", "*requirements*.in", "*constraints*.txt", "requirements*.pip")),
    ("pyproject", ("pyproject.toml",)),
    ("setup.cfg", ("setup.cfg",)),
    ("conda", ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml", "*.environment.yml", "env.yml", "env.yaml")),
    ("slurm", ("*.slurm", "*.sbatch")),
    ("shell", ("*.sh", "*.bash", "*.zsh")),
    ("make", ("makefile", "gnumakefile", "*.mk")),
    ("procfile", ("procfile", "procfile.*")),
    ("docker", ("dockerfile", "dockerfile.*", "*.dockerfile", "containerfile", "containerfile.*")),
    ("yaml", ("*.yml", "*.yaml")),
    ("json", ("*.json",)),
    ("toml", ("*.toml",)),
)

# Words a file must contain for any port to find something (the prefilter; never misses a change).
_TRIGGER = re.compile(
    r"cuda|cu\d{3}|nccl|fp16|float16|16-mixed|16-true|\bhalf\b|precision|gpu|nvidia|torch|\bamp\b|num_processes|"
    r"dynamo|cublas|flash|apex|xformers|bitsandbytes|deepspeed|triton|mamba|causal|tensorrt|cupy|dali|cudnn|"
    r"vllm|gptq|awq|liger|pynvml|nvml|transformer.engine|onnxruntime|-G\s*\d",
    re.IGNORECASE,
)


def kind_of(path: str, head: bytes | None = None) -> str | None:
    """The kind of file ``path`` is (``requirements``, ``shell``, ``yaml``...), or None.

    ``head``: the file's first bytes, used for extensionless scripts (read from disk when None).
    ``setup.py`` is reported as ``setup.py`` although ``handles`` refuses it.
    """
    parts = re.split(r"[\\/]+", path)
    name = parts[-1].lower()
    if name == "setup.py":
        return "setup.py"
    if name.endswith((".py", ".pyi", ".ipynb")) or _SKIPPED_PARTS.intersection(parts[:-1]):
        return None
    if len(parts) > 1 and parts[-2].lower() == "requirements" and name.endswith((".txt", ".in")):
        return "requirements"
    for kind, patterns in _PATTERNS:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            if kind in ("yaml", "json", "toml") and (name in _NOT_CONFIGS or name.startswith(".")):
                return None
            return kind
    if "." not in name and _shebang(path, head):
        return "shell"
    return None


def _shebang(path: str, head: bytes | None) -> bool:
    if head is None:
        try:
            with open(path, "rb") as handle:
                head = handle.read(64)
        except OSError:
            return False
    return re.match(rb"#!\s*\S*(?:/|env\s+)(?:ba|z|da)?sh\b", head) is not None


def handles(path: str) -> bool:
    """Whether porter ports ``path`` as a non-Python file (``setup.py``: see ``port_file``)."""
    kind = kind_of(path)
    return kind is not None and kind != "setup.py"


def explain(code: str) -> str | None:
    """The documentation of a file code, or None for a code that is not one."""
    doc = DOCS.get(code.strip().upper())
    return doc.render(code.strip().upper()) if doc is not None else None


def migrate_file(path: str, options: Options | None = None, display_path: str | None = None) -> FileResult:
    """Port one file on disk (the non-Python twin of ``porter.engine.core.migrate_file``)."""
    return port_from_disk(path, options, display_path, lambda data, shown, chosen: port_file(shown, data, chosen))


def chain_setup_py(path: str, data: bytes, python_result: FileResult, options: Options | None = None) -> FileResult:
    """Port a setup.py's requirement lists on top of the Python engine's result for it.

    ``data``: the original bytes; ``python_result``: what ``porter.engine.core.port_source`` gave.
    The requirement port runs on the Python port's output, so its line numbers refer to that
    text (the same as the original unless a Python rule added or removed lines above them).
    """
    if isinstance(python_result, Failure):
        return python_result
    base = python_result.new if isinstance(python_result, Success) else data
    mine = port_file(path, base, options)
    if not isinstance(mine, Success) or mine.new == base:
        return python_result
    earlier = python_result.changes if isinstance(python_result, Success) else ()
    changes = tuple(sorted((*earlier, *mine.changes), key=lambda c: (c.line, c.column, c.code, c.message)))
    encoding = python_result.encoding if isinstance(python_result, Success) else mine.encoding
    findings = python_result.findings if isinstance(python_result, (Success, Unchanged)) else ()
    return Success(python_result.path, old=data, new=mine.new, encoding=encoding, changes=changes, findings=findings)


def port_file(path: str, data: bytes, options: Options | None = None) -> FileResult:
    """Port one non-Python file's bytes. Never raises for a bad file."""
    options = options or Options()
    kind = kind_of(path, data[:64])
    if kind is None:
        return Unchanged(path, skipped="not a file kind porter ports")
    try:
        text, encoding = decode(data, options.max_file_size)
    except DecodeError as error:
        return Failure(path, str(error), kind="read")
    if options.prefilter and not _TRIGGER.search(text):
        return Unchanged(path, skipped="prefilter")
    doc = Doc(path, text, options)
    try:
        _PORTS[kind](doc)
        new = doc.render()
        if new != text:
            _VERIFY[kind](new[1:] if new.startswith("\ufeff") else new)
    except ParseError as error:
        return Failure(path, str(error), kind="parse")
    except _yamlpos.YamlUnavailable as error:
        return Unchanged(path, skipped=str(error))
    except RecursionError:
        return Failure(path, "document nested too deeply to port", kind="internal")
    except _PortCheckError as error:
        return Failure(path, f"internal error: the port did not re-parse ({error}); file left as it was", kind="internal")
    except Exception as error:  # a bug in a port must not stop a batch
        return Failure.internal(path, error)
    changes = doc.sorted_changes()
    if new == text and not changes:
        return Unchanged(path)
    # A JSON file with review findings only: reported, not written (new == old).
    return Success(path, old=data, new=new.encode(encoding), encoding=encoding, changes=changes)


# ---------------------------------------------------------------------------- dispatch
def _config(fmt: str, conda_name: bool = False) -> Callable[[Doc], None]:
    """The config port of a document; a YAML that is a conda environment gets the dependency port."""

    def run(doc: Doc) -> None:
        if fmt == "yaml":
            roots = _yamlpos.parse_all(doc.source)
            if _is_conda(roots, conda_name):
                deps.port_conda(doc)
                return
        elif fmt == "json":
            roots = [_jsonpos.parse(doc.source)]
            if roots[0].kind == "map" and roots[0].get("architectures") is not None:
                return  # a checkpoint's model config (config.json next to the weights): not a training setting
        else:
            roots = [_tomlpos.parse(doc.source)]
        configs.ConfigPort(doc, fmt).run(roots)

    return run


def _is_conda(roots: list[Node], by_name: bool) -> bool:
    """A conda environment: a ``dependencies`` list, with ``name``/``channels`` unless the file name says so."""
    if not roots or roots[0].kind != "map":
        return False
    dependencies = roots[0].get("dependencies")
    if dependencies is None or dependencies.kind != "seq":
        return False
    return by_name or bool(set(roots[0].keys()) & {"name", "channels", "prefix"})


_PORTS: dict[str, Callable[[Doc], None]] = {
    "requirements": deps.port_requirements_txt,
    "pyproject": deps.port_pyproject,
    "setup.cfg": deps.port_setup_cfg,
    "setup.py": lambda doc: _setup_py().port_setup_py(doc),
    "conda": _config("yaml", conda_name=True),
    "shell": lambda doc: shell.port_script(doc, "shell"),
    "slurm": lambda doc: shell.port_script(doc, "slurm"),
    "make": lambda doc: shell.port_script(doc, "make"),
    "procfile": lambda doc: shell.port_script(doc, "procfile"),
    "docker": lambda doc: shell.port_script(doc, "docker"),
    "yaml": _config("yaml"),
    "json": _config("json"),
    "toml": _config("toml"),
}


def _setup_py() -> ModuleType:
    """The setup.py port, imported on first use: it loads libcst, which discovery must not."""
    from porter.filetypes import setup_py

    return setup_py


class _PortCheckError(Exception):
    pass


def _check(parse: Callable[[str], object]) -> Callable[[str], None]:
    def verify(text: str) -> None:
        try:
            parse(text)
        except (ParseError, SyntaxError, ValueError) as error:
            raise _PortCheckError(" ".join(str(error).split())[:200]) from None

    return verify


def _no_check(text: str) -> None:
    return None


def _cfg_parse(text: str) -> None:
    import configparser

    try:
        configparser.ConfigParser(interpolation=None, strict=False).read_string(text)
    except configparser.Error as error:
        raise ParseError(f"invalid setup.cfg: {error}") from None


_VERIFY: dict[str, Callable[[str], None]] = {
    "requirements": _no_check,
    "pyproject": _check(_tomlpos.parse),
    "setup.cfg": _check(_cfg_parse),
    "setup.py": _check(lambda text: _setup_py().check(text)),
    "conda": _check(_yamlpos.parse_all),
    "shell": _no_check,
    "slurm": _no_check,
    "make": _no_check,
    "procfile": _no_check,
    "docker": _no_check,
    "yaml": _check(_yamlpos.parse_all),
    "json": _check(_jsonpos.parse),
    "toml": _check(_tomlpos.parse),
}
