"""``[tool.porter]`` in the nearest pyproject.toml: project defaults that CLI flags override.

Keys (kebab-case, as in the table)::

    [tool.porter]
    select = ["NRN1", "NRN2"]      # rule codes or prefixes; empty = every rule
    ignore = ["NRN104"]
    exclude = ["third_party", "*_pb2.py"]
    style = "neuron"               # or "accelerator"
    log-interval = 10              # steps between log lines the host-sync rules introduce
    compile-insertion = true       # insert model.compile(backend="neuron") where missing
    all = false                    # performance rules on every file, not only files being ported
    jobs = 4                       # worker processes (0 = all cores)
    max-file-size = 4194304        # bytes; larger files are refused
    time-limit = 120               # seconds one file may take to port (0: no limit)
    cache-dir = ".porter_cache"    # relative to the pyproject.toml's folder
    cache = true
    per-file-ignores = {"tests/*" = ["NRN6"], "legacy.py" = ["NRN1"]}  # glob -> codes never applied

``per-file-ignores`` globs are relative to the pyproject.toml's folder (``*`` crosses folders, as
in ruff; a glob without ``/`` also matches a file's name in any folder).

The nearest pyproject.toml *with a* ``[tool.porter]`` table, searching upwards from the path,
is used (as ruff does); none means porter's defaults. Unknown keys and wrong types are errors,
not silently ignored. This module imports neither libcst nor the engine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from porter.engine.options import DEFAULT_LOG_INTERVAL, DEFAULT_MAX_FILE_SIZE, DEFAULT_TIME_LIMIT

CACHE_DIR_NAME = ".porter_cache"


class ConfigError(Exception):
    """A pyproject.toml porter cannot use; the message names the file and the key."""


@dataclass(frozen=True)
class Setting:
    key: str  # as written in [tool.porter]
    kind: type | tuple[type, ...]
    default: Any
    help: str
    choices: tuple[str, ...] = ()


SETTINGS: tuple[Setting, ...] = (
    Setting("select", list, [], "rule codes or prefixes to run (empty: all)"),
    Setting("ignore", list, [], "rule codes or prefixes to skip"),
    Setting("exclude", list, [], "globs of files/folders not to port (below a root)"),
    Setting("style", str, "neuron", "neuron: explicit device; accelerator: torch.accelerator", ("neuron", "accelerator")),
    Setting("log-interval", int, DEFAULT_LOG_INTERVAL, "steps between log lines introduced by host-sync rules"),
    Setting("compile-insertion", bool, True, "insert model.compile(backend='neuron') where a script has none"),
    Setting("all", bool, False, "run performance rules on every file"),
    Setting("jobs", int, 0, "worker processes (0: all cores)"),
    Setting("max-file-size", int, DEFAULT_MAX_FILE_SIZE, "refuse files larger than this many bytes"),
    Setting("time-limit", int, int(DEFAULT_TIME_LIMIT), "seconds one file may take to port; slower files fail, left as they were (0: no limit)"),
    Setting("cache-dir", str, CACHE_DIR_NAME, "content cache folder (relative to the config file)"),
    Setting("cache", bool, True, "use the content cache"),
    Setting("per-file-ignores", dict, {}, "glob (relative to the config file) -> codes or prefixes not applied to matching files"),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}


@dataclass(frozen=True)
class Config:
    """Effective settings and where each came from (``default``, a pyproject path, or ``cli``)."""

    values: Mapping[str, Any]
    sources: Mapping[str, str]
    path: str | None = None  # the pyproject.toml used, if any
    root: str = field(default_factory=os.getcwd)  # its folder (or the cwd): relative paths start here

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """CLI flags win over the file; each override is validated like a file value."""
        values = dict(self.values)
        sources = dict(self.sources)
        for key, value in overrides.items():
            values[key] = _validate(key, value, "command line")
            sources[key] = "cli"
        return Config(values, sources, self.path, self.root)

    @property
    def cache_dir(self) -> str:
        env = os.environ.get("PORTER_CACHE_DIR")
        if env and self.sources.get("cache-dir") == "default":
            return env
        return os.path.join(self.root, self.values["cache-dir"])


def find_pyproject(start: str) -> str | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.porter]`` table."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and _mentions_porter(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _mentions_porter(path: str) -> bool:
    # A cheap text test first: most pyproject.toml files have no [tool.porter] and need no parser.
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    if b"porter" not in text:
        return False
    return bool(_parse(path, text).get("tool", {}).get("porter") is not None)


def _parse(path: str, data: bytes) -> dict[str, Any]:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(
                f"{path}: reading [tool.porter] needs Python 3.11+ or the 'tomli' package (pip install tomli)"
            ) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def load_config(start: str | None = None) -> Config:
    """The effective file configuration for ``start`` (a path being ported; default: the cwd)."""
    values = {setting.key: setting.default for setting in SETTINGS}
    sources = {setting.key: "default" for setting in SETTINGS}
    path = find_pyproject(start or os.getcwd())
    if path is None:
        return Config(values, sources, None, os.getcwd())
    with open(path, "rb") as handle:
        table = _parse(path, handle.read()).get("tool", {}).get("porter", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.porter] must be a table")
    for key, value in table.items():
        values[key] = _validate(key, value, path)
        sources[key] = path
    return Config(values, sources, path, os.path.dirname(path))


def _validate(key: str, value: Any, where: str) -> Any:
    setting = BY_KEY.get(key)
    if setting is None:
        known = ", ".join(sorted(BY_KEY))
        raise ConfigError(f"{where}: unknown [tool.porter] key {key!r} (known: {known})")
    if setting.kind is list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: [tool.porter] {key} must be a list of strings")
        return list(value)
    if setting.kind is dict:
        if not isinstance(value, dict) or not all(
            isinstance(codes, list) and all(isinstance(code, str) for code in codes) for codes in value.values()
        ):
            raise ConfigError(f"{where}: [tool.porter] {key} must be a table of glob = [codes]")
        return {str(glob): list(codes) for glob, codes in value.items()}
    if setting.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: [tool.porter] {key} must be an integer")
    if setting.kind is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: [tool.porter] {key} must be true or false")
    if setting.kind is str and not isinstance(value, str):
        raise ConfigError(f"{where}: [tool.porter] {key} must be a string")
    if setting.choices and value not in setting.choices:
        raise ConfigError(f"{where}: [tool.porter] {key} must be one of {', '.join(setting.choices)}")
    if key in ("log-interval", "max-file-size") and value < 1:
        raise ConfigError(f"{where}: [tool.porter] {key} must be at least 1")
    if key in ("jobs", "time-limit") and value < 0:
        raise ConfigError(f"{where}: [tool.porter] {key} must be 0 or more")
    return value


def codes(values: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Rule codes from a list whose items may hold comma-separated codes, upper-cased."""
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


def _selection(config: Config, key: str) -> tuple[str, ...]:
    """``select``/``ignore`` checked against the codes porter emits (a typo is an error, not every
    rule switched off). Loads the rules only when the list is not empty."""
    if not config[key]:
        return ()
    from porter.engine.registry import SelectionError, normalize_selection

    source = config.sources.get(key, "default")
    what = f"--{key}" if source == "cli" else f"{source}: [tool.porter] {key} ="
    try:
        return normalize_selection(config[key], what)
    except SelectionError as error:
        raise ConfigError(str(error)) from None


def per_file_ignores(config: Config) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``per-file-ignores`` with each glob's codes checked like ``ignore`` (a typo is an error)."""
    table = config["per-file-ignores"]
    if not table:
        return ()
    from porter.engine.registry import SelectionError, normalize_selection

    where = f"{config.sources.get('per-file-ignores')}: [tool.porter] per-file-ignores"
    try:
        return tuple((glob, normalize_selection(codes, f"{where} {glob!r} =")) for glob, codes in table.items())
    except SelectionError as error:
        raise ConfigError(str(error)) from None


def ignored_for(path: str, root: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, ...]:
    """The codes ``table`` (``per_file_ignores``) suppresses for the file at ``path``."""
    if not table:
        return ()
    from fnmatch import fnmatchcase

    relative = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    name = relative.rsplit("/", 1)[-1]
    found: list[str] = []
    for glob, codes in table:
        pattern = glob.replace(os.sep, "/").removeprefix("./")
        if fnmatchcase(relative, pattern) or ("/" not in pattern and fnmatchcase(name, pattern)):
            found.extend(codes)
    return tuple(dict.fromkeys(found))


def to_options_fields(config: Config) -> dict[str, Any]:
    """The ``Options`` fields the configuration sets (Options itself stays the engine's type)."""
    return {
        "select": _selection(config, "select"),
        "ignore": _selection(config, "ignore"),
        "style": config["style"],
        "all_files": config["all"],
        "log_interval": config["log-interval"],
        "insert_compile": config["compile-insertion"],
        "max_file_size": config["max-file-size"],
        "time_limit": float(config["time-limit"]),
    }


def effective_jobs(requested: int) -> int:
    """``0`` means every core this process may use."""
    if requested > 0:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def render(config: Config, as_json: bool = False) -> str:
    """The effective configuration as TOML (with each value's source as a comment) or JSON."""
    if as_json:
        import json

        return json.dumps(
            {"config_file": config.path, "values": dict(config.values), "sources": dict(config.sources)}, indent=2
        )
    lines = [f"# config file: {config.path or 'none (porter defaults)'}", "[tool.porter]"]
    for setting in SETTINGS:
        value = config.values[setting.key]
        source = config.sources[setting.key]
        lines.append(f"{setting.key} = {_toml(value)}  # {source}")
    return "\n".join(lines)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml(str(key))} = {_toml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)

