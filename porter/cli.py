"""The command line: a thin click layer over the library. Entry point ``main(argv) -> int``.

Exit codes: 0 clean; 1 with ``--check`` when a port would change a file (or a command's own
findings fail); 2 on errors (a file that could not be read or parsed, bad usage, a crash).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from collections.abc import Sequence

import click

from porter import __version__
from porter import commands as _commands_pkg

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="porter")
def cli() -> None:
    """Port CUDA-centric PyTorch training code to AWS Trainium (TorchNeuron, device "neuron").

    \b
      porter migrate train.py             show the port as a diff, with why each change was made
      porter migrate train.py --write     apply it in place
      porter migrate repo/ --out ported/  write a ported copy of a tree
      porter check ported/train.py --against train.py   compile and compare losses
      porter rules / porter explain CODE  what each rule does

    Exit codes: 0 clean, 1 findings (e.g. --check and a file would change), 2 errors.
    """


def _add_commands() -> None:
    for info in sorted(pkgutil.iter_modules(_commands_pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{_commands_pkg.__name__}.{info.name}")
        command = getattr(module, "command", None)
        if isinstance(command, click.Command):
            cli.add_command(command)


_add_commands()


def main(argv: Sequence[str] | None = None) -> int:
    """Run porter with ``argv`` (without the program name); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="porter", standalone_mode=False)
    except click.exceptions.Exit as done:  # --help, --version
        return int(done.exit_code or 0)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as error:
        error.show()
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    except Exception:  # a crash is an error exit with the traceback, never a silent 0
        click.echo("porter: internal error; please report it with this traceback:", err=True)
        click.echo(traceback.format_exc(), err=True)
        return EXIT_ERROR
    if result is None:
        return EXIT_OK
    return int(result)


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
