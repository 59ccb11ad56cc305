"""A CUDA device handed to a function of the project's own module (``Options.imports``).

The runner lists the modules a file imports that are files of the project (porter/run/local_imports.py);
NRN101 reads the callee there (rules/_lib/device.py: ImportedCallees) and ports the argument as it
would for a function of the same file. Shaped like torchrl's sac-async script and its utils.py,
which hands ``"cuda:1"`` to ``make_sac_agent`` (tests/fixtures_pending/async_collector_across_files).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from porter.cli import main
from porter.engine.imported import imported_module
from porter.engine.options import Options
from porter.run.local_imports import local_imports, with_local_imports

HELPERS = """\
import torch


def build_policy(width, device):
    return torch.nn.Linear(3, width).to(device)


def describe(width, label):
    print(width, label)


class Worker:
    def __init__(self, cfg, storing_device="cpu"):
        self.storing_device = storing_device
"""

TRAIN = """\
import torch

from helpers import Worker, build_policy, describe

policy = build_policy(64, "cuda:1")
worker = Worker({}, storing_device="cuda:0")
describe(3, "cuda:1")
"""

TRAIN_PORTED = """\
import torch

from helpers import Worker, build_policy, describe

policy = build_policy(64, "neuron:1")
worker = Worker({}, storing_device="neuron:0")
# porter: NRN101 CUDA device string "cuda:1" passed to describe(): not known to be a torch device there, kept; if it is one, make it "neuron"
describe(3, "cuda:1")
"""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def port(paths: list[Path], out: Path, *flags: str) -> int:
    return main(["migrate", *map(str, paths), "--out", str(out), "-q", "--no-diff", "--no-progress", *flags])


def test_a_device_argument_of_a_helper_modules_function_is_ported(tmp_path: Path) -> None:
    src = project(tmp_path / "src", {"helpers.py": HELPERS, "train.py": TRAIN})
    assert port([src], tmp_path / "out") == 0
    assert (tmp_path / "out" / "train.py").read_text() == TRAIN_PORTED
    assert (tmp_path / "out" / "helpers.py").read_bytes() == (src / "helpers.py").read_bytes()  # nothing to port there


def test_the_script_alone_reads_the_module_beside_it(tmp_path: Path) -> None:
    src = project(tmp_path / "src", {"helpers.py": HELPERS, "train.py": TRAIN})
    assert port([src / "train.py"], tmp_path / "out") == 0
    assert (tmp_path / "out" / "train.py").read_text() == TRAIN_PORTED


@pytest.mark.parametrize(
    "train",
    [
        'import helpers as h\n\npolicy = h.build_policy(64, "cuda:1")\n',
        'from helpers import build_policy as make\n\npolicy = make(64, device="cuda:1")\n',
        'from pkg import helpers\n\npolicy = helpers.build_policy(64, "cuda:1")\n',
        'from pkg.helpers import build_policy\n\npolicy = build_policy(64, "cuda:1")\n',
    ],
    ids=["module_alias", "function_alias_keyword", "submodule_of_package", "package_module"],
)
def test_alias_and_package_spellings(tmp_path: Path, train: str) -> None:
    files = {"helpers.py": HELPERS, "pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "train.py": train}
    src = project(tmp_path / "src", files)
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "train.py").read_text()
    assert '"neuron:1"' in ported and "cuda" not in ported


def test_relative_import_from_a_package(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/train.py": 'from .helpers import build_policy\n\nbuild_policy(8, "cuda:0")\n'}
    src = project(tmp_path / "src", files)
    assert port([src], tmp_path / "out") == 0
    assert (tmp_path / "out" / "pkg" / "train.py").read_text() == 'from .helpers import build_policy\n\nbuild_policy(8, "neuron:0")\n'


def test_a_function_of_the_parent_package_imported_by_bare_dots(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": HELPERS, "pkg/sub/__init__.py": "", "pkg/sub/train.py": 'from .. import build_policy\n\nbuild_policy(8, "cuda")\n'}
    src = project(tmp_path / "src", files)
    assert port([src], tmp_path / "out") == 0
    assert (tmp_path / "out" / "pkg" / "sub" / "train.py").read_text() == 'from .. import build_policy\n\nbuild_policy(8, "neuron")\n'


def test_a_callee_not_using_the_parameter_as_a_device_keeps_the_marker(tmp_path: Path) -> None:
    helpers = "def build_policy(width, name):\n    print(name)\n"
    src = project(tmp_path / "src", {"helpers.py": helpers, "train.py": 'from helpers import build_policy\n\nbuild_policy(8, "cuda:1")\n'})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "train.py").read_text()
    assert '# porter: NRN101 CUDA device string "cuda:1" passed to build_policy()' in ported
    assert 'build_policy(8, "cuda:1")' in ported


def test_a_function_defined_twice_in_the_module_is_not_resolved(tmp_path: Path) -> None:
    helpers = HELPERS + "\n\ndef build_policy(width, name):\n    print(name)\n"
    src = project(tmp_path / "src", {"helpers.py": helpers, "train.py": 'from helpers import build_policy\n\nbuild_policy(8, "cuda:1")\n'})
    assert port([src], tmp_path / "out") == 0
    assert 'build_policy(8, "cuda:1")' in (tmp_path / "out" / "train.py").read_text()


def test_the_port_is_a_fixed_point_and_idempotent(tmp_path: Path) -> None:
    src = project(tmp_path / "src", {"helpers.py": HELPERS, "train.py": TRAIN})
    assert port([src], tmp_path / "out") == 0
    assert port([tmp_path / "out"], tmp_path / "again") == 0
    for name in ("train.py", "helpers.py"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes()


def test_a_changed_helper_re_ports_its_importer_from_a_warm_cache(tmp_path: Path) -> None:
    src = project(tmp_path / "src", {"helpers.py": HELPERS, "train.py": TRAIN})
    cache = str(tmp_path / "cache")
    assert port([src], tmp_path / "out1", "--cache-dir", cache) == 0
    assert '"neuron:1"' in (tmp_path / "out1" / "train.py").read_text()
    # build_policy no longer takes a device: the cached port of the unchanged train.py must not be reused.
    (src / "helpers.py").write_text(HELPERS.replace(".to(device)", "").replace("width, device", "width, name"))
    assert port([src], tmp_path / "out2", "--cache-dir", cache) == 0
    assert 'build_policy(64, "cuda:1")' in (tmp_path / "out2" / "train.py").read_text()


def test_listing_resolves_as_python_finds_a_scripts_imports(tmp_path: Path) -> None:
    files = {
        "helpers.py": "x = 1\n",
        "pkg/__init__.py": "",
        "pkg/sub.py": "",
        "pkg/inner/__init__.py": "",
        "pkg/inner/train.py": "",
    }
    root = project(tmp_path, files)
    data = b'import helpers, os\nfrom pkg import sub\nfrom .. import sub as s\nfrom . import (\n    missing,\n)\nimport numpy\nx = "cuda"\n'
    listed = local_imports(str(root / "train.py"), data, 1 << 20)
    assert [(name, os.path.relpath(path, root)) for name, path, _ in listed] == [("helpers", "helpers.py"), ("pkg", "pkg/__init__.py"), ("pkg.sub", "pkg/sub.py")]
    assert listed[0][2] == hashlib.sha256(b"x = 1\n").hexdigest()
    inner = local_imports(str(root / "pkg" / "inner" / "train.py"), data, 1 << 20)
    assert [(name, os.path.relpath(path, root)) for name, path, _ in inner] == [
        ("..", "pkg/__init__.py"),
        ("..sub", "pkg/sub.py"),
        (".", "pkg/inner/__init__.py"),
    ]


def test_listing_needs_a_cuda_string_and_never_lists_the_file_itself(tmp_path: Path) -> None:
    root = project(tmp_path, {"helpers.py": "", "train.py": ""})
    options = Options()
    assert with_local_imports(options, str(root / "train.py"), b"import helpers\nx = torch.device(0)\n") is options
    assert with_local_imports(options, str(root / "train.py"), b"import train\nx = 'cuda'\n") is options
    assert with_local_imports(options, str(root / "train.py"), b"import helpers\nx = 'cuda'\n").imports[0][0] == "helpers"


def test_a_module_whose_bytes_changed_since_it_was_listed_is_not_read(tmp_path: Path) -> None:
    helpers = project(tmp_path, {"helpers.py": HELPERS}) / "helpers.py"
    listed = Options(imports=(("helpers", str(helpers), hashlib.sha256(helpers.read_bytes()).hexdigest()),))
    tree = imported_module(listed, "helpers")
    assert tree is not None and tree.code == HELPERS
    stale = Options(imports=(("helpers", str(helpers), hashlib.sha256(b"other").hexdigest()),))
    assert imported_module(stale, "helpers") is None
    assert imported_module(listed, "other") is None


def test_a_module_created_after_a_run_is_seen_by_the_next_run_in_the_same_process(tmp_path: Path) -> None:
    src = project(tmp_path / "src", {"train.py": TRAIN})
    assert port([src], tmp_path / "out1", "--no-cache") == 0
    assert 'build_policy(64, "cuda:1")' in (tmp_path / "out1" / "train.py").read_text()
    project(src, {"helpers.py": HELPERS})
    assert port([src], tmp_path / "out2", "--no-cache") == 0
    assert (tmp_path / "out2" / "train.py").read_text() == TRAIN_PORTED


# NRN416: the updater a compiled function steps comes from the helper module (torchrl's iql/utils.py
# returns `loss_module, target_net_updater` from make_discrete_loss; discrete_iql.py compiles update).
LOSS_HELPERS = """\
from torchrl.objectives import DiscreteIQLLoss, HardUpdate, SoftUpdate


def make_discrete_loss(cfg, model):
    loss_module = DiscreteIQLLoss(model[0], model[1], value_network=model[2])
    target_net_updater = HardUpdate(loss_module, value_network_update_interval=cfg.interval)
    return loss_module, target_net_updater


def make_loss(cfg, model):
    loss_module = DiscreteIQLLoss(model[0], model[1], value_network=model[2])
    return loss_module, SoftUpdate(loss_module, tau=cfg.tau)
"""

COMPILED_UPDATE = """\
import torch

from utils import {maker}


def main(cfg, model, buffer):
    loss_module, target_net_updater = {maker}(cfg, model)
    optimizer = torch.optim.Adam(loss_module.parameters())

    def update(batch):
        loss = loss_module(batch)["loss_value"]
        loss.backward()
        optimizer.step()
        target_net_updater.step()
        return loss.detach()

    update = torch.compile(update, backend="neuron", dynamic=False)
    for _ in range(cfg.steps):
        update(buffer.sample())
"""


def test_a_hard_update_returned_by_a_helper_modules_function_is_stepped_eagerly(tmp_path: Path) -> None:
    """The script names no CUDA string: its imports are listed because it compiles and steps."""
    src = project(tmp_path / "src", {"utils.py": LOSS_HELPERS, "train.py": COMPILED_UPDATE.format(maker="make_discrete_loss"),
                                     "soft.py": COMPILED_UPDATE.format(maker="make_loss")})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "train.py").read_text()
    assert ported == COMPILED_UPDATE.format(maker="make_discrete_loss").replace(
        "        target_net_updater.step()\n", "        torch.compiler.disable(target_net_updater.step)()\n")
    assert (tmp_path / "out" / "soft.py").read_bytes() == (src / "soft.py").read_bytes()  # SoftUpdate: traced as it is
    assert port([tmp_path / "out"], tmp_path / "again") == 0  # a fixed point
    assert (tmp_path / "again" / "train.py").read_text() == ported


@pytest.mark.parametrize(
    ("spelling", "made"),
    [("import torchrl.objectives as objectives", "objectives.HardUpdate"), ("import torchrl.objectives", "torchrl.objectives.HardUpdate"),
     ("from torchrl.objectives import HardUpdate as Hard", "Hard")],
    ids=["module_alias", "dotted_import", "class_alias"],
)
def test_the_helper_modules_own_import_spellings_are_read(tmp_path: Path, spelling: str, made: str) -> None:
    helpers = (f"{spelling}\n\n\ndef make_discrete_loss(cfg, model):\n    loss_module = model\n"
               f"    target_net_updater = {made}(loss_module, value_network_update_interval=cfg.interval)\n"
               "    return loss_module, target_net_updater\n")
    src = project(tmp_path / "src", {"utils.py": helpers, "train.py": COMPILED_UPDATE.format(maker="make_discrete_loss")})
    assert port([src], tmp_path / "out") == 0
    assert "torch.compiler.disable(target_net_updater.step)()" in (tmp_path / "out" / "train.py").read_text()


# NRN416 two files away: online_dt.py calls make_odt_optimizer of utils.py, which builds Lamb of lamb.py
# (torchrl 0.14.1 sota-implementations/decision_transformer), whose step counts in group["step"].
LAMB = """\
import torch
from torch.optim import Optimizer


class Lamb(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, {"lr": lr, "betas": (0.9, 0.999)})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if "step" in group:
                group["step"] += 1
            else:
                group["step"] = 1
            correction = 1 - group["betas"][0] ** group["step"]
            for p in group["params"]:
                p.add_(p.grad, alpha=-group["lr"] / correction)
"""

OPTIM_HELPERS = """\
import torch.optim
from lamb import Lamb


def make_odt_optimizer(cfg, loss_module):
    if cfg.optimizer == "lamb":
        dt_optimizer = Lamb(loss_module.parameters(), lr=cfg.lr)
    elif cfg.optimizer == "adam":
        dt_optimizer = torch.optim.Adam(loss_module.parameters(), lr=cfg.lr)
    log_temp_optimizer = torch.optim.Adam([loss_module.log_alpha], lr=1e-4)
    return dt_optimizer, log_temp_optimizer
"""

ONLINE_DT = """\
import torch

from utils import make_odt_optimizer


def main(cfg, loss_module, buffer):
    transformer_optim, temperature_optim = make_odt_optimizer(cfg, loss_module)

    def update(data):
        loss = loss_module(data)
        loss.backward()
        transformer_optim.step()
        temperature_optim.step()
        return loss.detach()

    update = torch.compile(update, backend="neuron", dynamic=False)
    for _ in range(cfg.steps):
        update(buffer.sample())
"""


def test_an_optimizer_counting_in_a_python_int_built_by_a_helper_of_a_helper_is_stepped_eagerly(tmp_path: Path) -> None:
    """The class is in a module the helper imports (one level further): listed, read, its step disabled;
    the torch optimizer beside it stays traced. Changing lamb.py re-ports the script from a warm cache."""
    src = project(tmp_path / "src", {"lamb.py": LAMB, "utils.py": OPTIM_HELPERS, "online_dt.py": ONLINE_DT})
    listed = [name for name, _path, _digest in local_imports(str(src / "online_dt.py"), ONLINE_DT.encode(), 1 << 20, further=True)]
    assert listed[:1] == ["utils"] and "lamb" in listed
    assert "lamb" not in [name for name, _path, _digest in local_imports(str(src / "online_dt.py"), ONLINE_DT.encode(), 1 << 20)]
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "online_dt.py").read_text()
    assert ported == ONLINE_DT.replace("        transformer_optim.step()\n", (
        "        # porter: NRN417 Lamb.step() runs eagerly (op by op) so its Python step count is no guard: the same "
        "operations, unfused; to compile it, keep the count in a tensor as torch.optim does\n"
        "        torch.compiler.disable(transformer_optim.step)()\n"))
    assert port([tmp_path / "out"], tmp_path / "again") == 0  # a fixed point
    assert (tmp_path / "again" / "online_dt.py").read_text() == ported
    (src / "lamb.py").write_text(LAMB.replace('group["step"] += 1', 'group["step"] = group["step"] + 1'))
    assert port([src], tmp_path / "out2") == 0  # no longer `+= 1`: not recognised, and not served from the cache
    assert (tmp_path / "out2" / "online_dt.py").read_text() == ONLINE_DT


# NRN612: a metrics dict read only by a helper module's logging function (torchrl's cql_offline with its utils.py).
LOG_HELPERS = '''def log_metrics(logger, metrics, step):
    if logger is not None:
        logger.log_metrics(metrics, step)


def log_or_print(logger, metrics, step):
    if logger is not None:
        logger.log_metrics(metrics, step)
    else:
        print(step, metrics)
'''
OFFLINE = '''import torch

from utils import log_metrics


def train(loss_module, optimizer, buffer, steps, logger=None, device="cuda"):
    for i in range(steps):
        loss, parts = loss_module(buffer.sample().to(device))
        loss.backward()
        optimizer.step()
        metrics = {"loss": loss.cpu(), **parts.cpu()}
        log_metrics(logger, metrics, i)
'''


def test_a_metrics_dict_read_only_by_a_helper_modules_logger_function_is_read_only_with_a_logger(tmp_path: Path) -> None:
    """The helper is read, in the port too (no CUDA string left: listed because the file reads device
    values and logs, so a second pass is a fixed point); a helper that prints without a logger reads
    the dict anyway: left."""
    src = project(tmp_path / "src", {"utils.py": LOG_HELPERS, "offline.py": OFFLINE})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "offline.py").read_text()
    listed = with_local_imports(Options(), str(tmp_path / "out" / "offline.py"), ported.encode()).imports
    assert [name for name, _path, _digest in listed] == ["utils"]
    assert ported == OFFLINE.replace('device="cuda"', 'device="neuron"').replace(
        '        metrics = {"loss": loss.cpu(), **parts.cpu()}\n',
        "        # porter: NRN612 metrics is read only by log_metrics(...), which does nothing when logger is None: its device"
        " values are read only when logger is not None (then as often as before)\n"
        '        metrics = {"loss": loss.cpu(), **parts.cpu()} if logger is not None else {}\n')
    assert port([tmp_path / "out"], tmp_path / "again") == 0  # a fixed point
    assert (tmp_path / "again" / "offline.py").read_text() == ported
    printing = OFFLINE.replace("log_metrics", "log_or_print")
    (src / "offline.py").write_text(printing)
    assert port([src], tmp_path / "out2") == 0
    assert (tmp_path / "out2" / "offline.py").read_text() == printing.replace('device="cuda"', 'device="neuron"')


def test_a_package_is_read_before_a_module_of_the_same_name(tmp_path: Path) -> None:
    """``utils/__init__.py`` beside ``utils.py``: Python imports the package, so porter reads that one
    (here its log_metrics always prints: the metrics dict is read without a logger too, and stays)."""
    src = project(tmp_path / "src", {"utils.py": LOG_HELPERS, "utils/__init__.py": LOG_HELPERS.replace(
        "def log_or_print", "def other").replace("def log_metrics", "def log_or_print").replace("def other", "def log_metrics"),
        "offline.py": OFFLINE})
    listed = local_imports(str(src / "offline.py"), OFFLINE.encode(), 1 << 20)
    assert [(name, os.path.relpath(path, src)) for name, path, _digest in listed] == [("utils", os.path.join("utils", "__init__.py"))]
    assert port([src], tmp_path / "out") == 0
    assert (tmp_path / "out" / "offline.py").read_text() == OFFLINE.replace('device="cuda"', 'device="neuron"')


MODELS = """\
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.modules import ProbabilisticActor, TanhNormal


def make_actor(env, device):
    kwargs = {"low": env.action_spec.space.low.to(device), "high": env.action_spec.space.high.to(device)}
    net = TensorDictModule(nn.Linear(3, 2).to(device), in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal, distribution_kwargs=kwargs)


def make_models(env, device):
    return make_actor(env, device), nn.Linear(3, 1).to(device)
"""

ON_POLICY = """\
from torchrl.collectors import Collector


def main(env):
    from models import make_models

    device = "cuda"
    actor, critic = make_models(env, device)
    collector = Collector(env, actor, frames_per_batch=64, total_frames=640, device=device)
    for data in collector:
        critic(data)
"""


def test_a_policy_built_with_device_bounds_in_a_helper_module_is_marked_at_its_cpu_collector(tmp_path: Path) -> None:
    """NRN116: the policy the CPU collector copies comes from ``make_models`` of ``models.py``, imported
    in the function, which builds TanhNormal bounds on the device in the ``make_actor`` it calls; the
    collector is marked, naming where (torchrl's CPU copy keeps those bounds on the device)."""
    src = project(tmp_path / "src", {"models.py": MODELS.replace("distribution_kwargs=kwargs)", "distribution_kwargs=kwargs), kwargs"),
                                     "train.py": ON_POLICY})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "train.py").read_text()
    assert ("# porter: NRN116 the policy's distribution bounds are built on the device (models.make_actor(): "
            "`env.action_spec.space.low.to(device)`)") in ported, ported
    assert "build them on the host" in ported  # make_actor also returns them: models.py's port leaves them
    assert ".low.to(device)" in (tmp_path / "out" / "models.py").read_text()
    assert port([tmp_path / "out"], tmp_path / "again") == 0  # a fixed point
    assert (tmp_path / "again" / "train.py").read_text() == ported
    (src / "models.py").write_text(MODELS.replace(".to(device)}", "}").replace(".low.to(device)", ".low"))
    assert port([src], tmp_path / "out2") == 0
    assert "distribution bounds" not in (tmp_path / "out2" / "train.py").read_text()


def test_device_bounds_a_helper_module_keeps_on_the_host_are_named_at_the_collector(tmp_path: Path) -> None:
    """NRN116: ``make_actor`` hands its kwargs only to the TanhNormal actor, so the port of ``models.py``
    keeps the bounds on the host (``.to(device)`` dropped, with a marker); the collector's marker says
    so, for a port of ``train.py`` without ``models.py``. Ported again, both files are a fixed point."""
    src = project(tmp_path / "src", {"models.py": MODELS, "train.py": ON_POLICY})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "train.py").read_text()
    assert ("`env.action_spec.space.low.to(device)`): this collector's CPU copy of the policy keeps them there "
            "(torchrl maps only its parameters and buffers, torchrl/collectors/_base.py:805-828), and a distribution "
            "built with them reads them back at every env step; porter's port of that module keeps them on the host "
            "(NRN116 there): port it with this file") in ported, ported
    models = (tmp_path / "out" / "models.py").read_text()
    assert 'kwargs = {"low": env.action_spec.space.low.cpu(), "high": env.action_spec.space.high.cpu()}' in models, models
    assert "# porter: NRN116 the distribution's bounds are built on the host" in models
    assert port([tmp_path / "out"], tmp_path / "again") == 0
    for name in ("train.py", "models.py"):
        assert (tmp_path / "again" / name).read_text() == (tmp_path / "out" / name).read_text()


@pytest.mark.parametrize("imports", [
    "import os\n\nif os.environ.get('USE_LOGGER'):\n    from utils import log_metrics\nelse:\n    from printing import *\n",
    "import os\n\nfrom printing import *\n",
])
def test_a_helper_another_import_may_bind_is_not_read(tmp_path: Path, imports: str) -> None:
    """``log_metrics`` imported in one branch, a star import (``printing.log_metrics`` prints) in the
    other, or a star import beside a function's own import: the name may hold the printing one, so
    NRN612 leaves the dict alone."""
    body = OFFLINE.replace("from utils import log_metrics\n", imports)
    if "if os.environ" not in imports:
        body = body.replace("    for i in range(steps):", "    from utils import log_metrics\n\n    for i in range(steps):")
    printing = LOG_HELPERS.replace("def log_metrics", "def unused").replace("def log_or_print", "def log_metrics")
    src = project(tmp_path / "src", {"utils.py": LOG_HELPERS, "printing.py": printing, "offline.py": body})
    assert port([src], tmp_path / "out") == 0
    ported = (tmp_path / "out" / "offline.py").read_text()
    assert "NRN612" not in ported and 'device="neuron"' in ported, ported
