"""porter check: run a ported script on an emulated neuron device and prove it compiles and trains the same.

Layout (porter's process never imports torch; everything that does runs in the script's subprocess):

- ``orchestrate``: ``run_check(CheckOptions) -> CheckReport``: the runs a check needs, the verdict.
- ``runner``: one subprocess per run (own argv, ``__main__``, cwd; timeout; JSON result file).
- ``harness/``: runs inside the subprocess: the emulated ``neuron`` device (``neuron_module``,
  ``device_mode``), CUDA emulation for originals and process patches (``patches``), the Dynamo
  backend registered as ``neuron`` (``backend``), Dynamo log collectors (``dynamo_log``), the same
  emulation in processes the script spawns (``child``).
- ``lowering``: AOT graph -> upstream torch-mlir StableHLO, with porter's decompositions and passes,
  in a forked child bounded in memory and time.
- ``gaps``: known upstream torch-mlir gaps (reported "not verified", never pass or fail).
- ``analyze`` / ``source``: raw record -> findings mapped to source lines and rule codes.
- ``parity``: loss comparison with named tolerances. ``report``: immutable dataclasses.
- ``render``: the rich terminal report. ``standin/torch_neuronx``: the emulation's stand-in package.

The emulated target is an upstream torch-mlir approximation of TorchNeuron's front end: Dynamo,
AOTAutograd and StableHLO lowering run; neuronx-cc, NEFF generation and the Neuron runtime do not.
"""

from porter.check.orchestrate import CheckOptions, run_check
from porter.check.report import CheckReport

__all__ = ["CheckOptions", "CheckReport", "run_check"]
