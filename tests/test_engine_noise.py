"""A removed statement leaves no noise: no `if x: pass` around nothing, no comment that described
only what was removed; comments that introduce what follows stay."""

from __future__ import annotations

from porter.engine.core import port_source
from porter.engine.results import Success


def _port(source: str) -> str:
    result = port_source(source.encode(), "t.py")
    assert isinstance(result, Success)
    return result.new_text


def test_if_around_only_removed_statements_goes() -> None:
    out = _port(
        "import torch\n\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\n\n"
        "if args.fast:\n    # let cuDNN pick kernels\n    torch.backends.cudnn.benchmark = True\nmodel = Net()\n"
    )
    assert out == "import torch\n\nmodel = Net()\n"


def test_if_with_an_effectful_test_or_an_else_stays() -> None:
    out = _port(
        "import torch\nif setup():\n    torch.backends.cudnn.benchmark = True\n"
        "if fast:\n    torch.backends.cudnn.benchmark = True\nelse:\n    print('slow')\n"
    )
    assert "if setup():\n    pass\n" in out
    assert "if fast:\n    pass\nelse:\n    print('slow')\n" in out


def test_one_line_suite_if_goes_too() -> None:
    out = _port("import torch\nif fast: torch.backends.cudnn.benchmark = True\nmodel = Net()\n")
    assert out == "import torch\nmodel = Net()\n"


def test_comment_of_a_removed_paragraph_goes_with_it() -> None:
    out = _port("import torch\n\n# autotune convolutions\ntorch.backends.cudnn.benchmark = True\n\nmodel = Net()\n")
    assert "autotune" not in out and out.endswith("\nmodel = Net()\n")


def test_comment_introducing_what_follows_stays() -> None:
    out = _port("import torch\n\n# setup\ntorch.backends.cudnn.benchmark = True\nmodel = Net()\n")
    assert "# setup\nmodel = Net()\n" in out
