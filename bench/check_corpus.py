"""`porter check` on the real-world corpus: which real training scripts does the check verify?

    python bench/check_corpus.py [--deps DIR] [--steps 3] [--only SUBSTRING] [--json OUT] [--keep DIR] [--timeout S]

``--deps DIR``: a folder of the projects' own dependencies that are not porter's (put on PYTHONPATH
after the project's root; nothing is installed into porter's environment). The figures in the README
used ``pip install --no-deps --target DIR`` + ``DEPS`` below.

The corpus is ``bench/corpus.py``'s (the pinned archives in ``~/.cache/porter-corpus``, fetched,
checked and unpacked by its code, imported here). The candidates are its files with a training step
loop (corpus.py's detector: ``backward()``/optimizer steps in a loop) and an
``if __name__ == "__main__":`` block. Each candidate is, in order:

1. a Hydra script whose ``config_name`` YAML is not next to it in the archive is **not runnable**
   (the published wheel carries the script, not its config). Then asked for ``--help`` (corpus.py's ``run_help``: a clean folder, the project's root on PYTHONPATH).
   An original that cannot print its usage here (a missing dependency, an import error) is
   **not runnable**, with the reason.
2. looked up in ``RECIPES``: what the script needs to train (its arguments, and the data files it
   reads). Real scripts mostly read a dataset, a tokenizer or pretrained weights, or step a simulator:
   a recipe then says so and the script is **not runnable** (why). Synthetic data is written only in
   the format the script itself reads; nothing is faked that the script does not read. A script
   with no recipe is not runnable ("no recipe"), never guessed.
3. with a runnable recipe: its folder is copied to a temp tree and ported (``porter migrate FOLDER
   --out``), then ``porter check PORT --against ORIG --steps N --json r.json -- ARGS`` runs with the
   project's root on PYTHONPATH. Printed per script: exit code, graphs / recompiles / graph breaks,
   graphs lowered, host syncs per step, the parity verdicts, and the root cause of a failure: the
   crash or the first failing finding at its file:line, said to be the script's own when the
   original fails the same way, porter's otherwise.

A script porter leaves byte-identical (its folder names no CUDA device or API: torchrl's bandit
DQN builds everything on the CPU, ``device="cpu"`` by default) is **nothing to port**: its check runs
and is printed, but it counts neither as verified (no port was proven) nor as failed (unchanged, it
runs on a Trainium host exactly as here, on the CPU; moving a CPU script to ``neuron`` is not porting
CUDA code, and porter changes no explicit device choice).

A script whose original crashes the same way as its port (the same exception at the same place) **fails as
published**: it does not run here with the recipe's inputs, by a bug of its own (torchtune's experimental
early-exit recipe mixes plain tensors with FSDP2's DTensors in its own loss), so no port of it can be verified.
It is printed with the crash and counted apart, outside the verified fraction's denominator, which holds the
scripts whose original runs.

A parity mismatch where the original also differs from itself under the same seeds (the check runs
its fp32 pass again) is the script's own: an unseeded source such as a simulator's generator.

Three steps by default: a compiled region that recompiles at step 1 only (torchrl's losses set their
in_keys at their first call) is then seen stable at step 2, and the check reports it as warm-up (a
warning, one extra graph compile on Neuron) rather than failing it; a recompile at step 2 fails.

The verified fraction is verified / runnable with a port (the check could run it, porter changed it, and
its original does not crash on its own).
A script that refuses compile at its own line (torchtune's QAT recipes: "Compile is not yet supported for
QAT") is checked with ``--allow-eager`` (its recipe's ``eager``: that line's text, found in the script, and
why): passing, it is **verified (eager)**: the port runs and trains the same as the original, eagerly.
It is counted apart, not in the verified fraction (nothing was compiled or lowered), and the summary
gives both figures.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402  (bench/corpus.py: manifest, download, unpack, step-loop detector, --help)

ROOT = Path(__file__).resolve().parent.parent
HELP_TIMEOUT = 120.0  # corpus.py's 20 s is too short for torchtune's imports on a loaded 2-core machine
# What the figures used for --deps (never torch: that is porter's own).
DEPS = ("tensordict==0.15.3", "pyvers", "hydra-core==1.3.8", "omegaconf", "antlr4-python3-runtime==4.9.3",
        "gymnasium==1.4.0", "cloudpickle", "farama-notifications", "vmas==1.5.2", "gym==0.26.2", "gym-notices", "six",
        "torchao==0.11.0", "torchdata==0.11.0", "sentencepiece", "tiktoken",  # torchtune 0.6.1 imports nf4tensor: torchao < 0.18
        # MuJoCo (PyPI's wheels, CPU simulation, no screen) for gymnasium's HalfCheetah; its imports pull glfw/OpenGL
        "mujoco==4.0.0", "mujoco-core==4.0.0", "mujoco-studio==4.0.0", "glfw==2.11.0", "pyopengl==3.1.10",
        "websockets==17.4", "imageio==2.38.2", "pillow==13.0.0",
        # Minari (offline datasets: cql's scripts record theirs) with its HDF5 backend and CLI's imports
        "minari==0.5.4", "h5py==3.15.1", "typer==0.29.2", "shellingham==1.5.4",
        # Minari's DataCollector maps episodes with jax.tree_util (minari[create])
        "jax==0.8.1", "jaxlib==0.8.1", "ml_dtypes==0.7.0", "opt_einsum==3.4.0", "scipy==1.17.1")


@dataclass(frozen=True)
class Recipe:
    """How one corpus script trains on a CPU: its arguments, or why it cannot here."""

    args: tuple[str, ...] = ()  # "{data}" is the folder the recipe's files are written to
    needs: str = ""  # non-empty: not runnable, this is why (the data/weights/simulator it reads)
    nproc: int = 1
    files: tuple[tuple[str, Any], ...] = ()  # (name, content) written to {data}; a dict is written as JSON
    make: str = ""  # Python run with the project on its path and {data} as argv[1]: files only the project can write
    why: str = ""  # what the files are, and why the script reads them so
    # Checked with --allow-eager: (text of the script's own line that refuses compile, why). The script
    # runs eagerly by design (on CUDA too): the check then proves the port runs and trains the same
    # eagerly, reported "verified (eager)" and counted apart from the compiled verifications.
    eager: tuple[str, str] | None = None
    # Steps this script needs at least (more than --steps): a schedule that first runs a second compiled
    # function late (crossq's update_all at every third update) needs a step after it to show it stable.
    min_steps: int = 0
    # (file of the project, path in the script's folder): the project's own files a user puts beside the
    # script before porting it (a config the script's folder does not ship); copied, then ported with it.
    beside: tuple[tuple[str, str], ...] = ()
    # Environment variables for the data maker and the check ("{data}" as in args): HOME={data}/home puts
    # a library's download cache (torchrl's ~/.cache/torchrl) in the recipe's folder, never the user's.
    env: tuple[tuple[str, str], ...] = ()
    # The check's runs take turns (porter check --one-at-a-time): the script writes files under fixed
    # names (discrete_cql_offline records its Minari dataset under one ID, then deletes it).
    one_at_a_time: bool = False


def hydra_recipe(config_name: str, config: dict[str, Any], why: str) -> Recipe:
    """A ``@hydra.main`` script given its primary config from {data} (Hydra's own ``--config-path`` and
    ``--config-name``; JSON is YAML). Hydra's run folder goes to {data} too, and no .hydra copy."""
    return Recipe(("--config-path", "{data}", "--config-name", config_name, "hydra.run.dir={data}/hydra",
                   "hydra.output_subdir=null"), files=((f"{config_name}.yaml", config),), why=why)


def write_files(recipe: Recipe, data: Path) -> None:
    for name, content in recipe.files:
        text = content if isinstance(content, str) else json.dumps(content, indent=1) + "\n"
        (data / name).write_text(text.replace("{data}", str(data)), encoding="utf-8")


# Per script (corpus key), what it reads. Read from each script's source and --help.
_TORCHTUNE = "a torchtune YAML config naming a pretrained checkpoint and tokenizer (downloaded weights) and a Hugging Face dataset"
_TORCHRL_ENV = "a simulator environment ({env}) that generates its training data"
# torchtune's full single-device finetune, on the project's own Qwen2.5 config (its configs/ ship in
# the wheel and are ported with the recipe: device: cuda -> neuron), with command-line overrides
# (torchtune's config.parse: key=value) for what it would download: a Qwen2-architecture model of one
# layer (torchtune's own qwen2 builder) saved as a torchtune-format state dict for
# FullModelTorchTuneCheckpointer, Qwen's byte-level BPE tokenizer files (vocab.json of the 256 byte
# symbols from torchtune's bytes_to_unicode, merges.txt with no merges; the special tokens are
# torchtune's own), and a 32-row Alpaca-format JSON file for alpaca_dataset(source="json").
_TORCHTUNE_MAKE = """
import json, sys
from pathlib import Path
import torch
from torchtune.models.qwen2 import qwen2
from torchtune.models.qwen2._tokenizer import bytes_to_unicode
from torchtune.models.llama3_2 import llama3_2
from torchtune.models.mistral._component_builders import mistral_classifier
data = Path(sys.argv[1])
(data / "vocab.json").write_text(json.dumps({ch: i for i, ch in enumerate(bytes_to_unicode().values())}))
(data / "merges.txt").write_text("#version: 0.2\\n")
(data / "ckpt").mkdir(exist_ok=True)
torch.manual_seed(0)
model = qwen2(vocab_size=151936, num_layers=1, num_heads=2, num_kv_heads=1, embed_dim=32, intermediate_dim=64, max_seq_len=128)
torch.save(model.state_dict(), data / "ckpt" / "model.pt")
rows = [{"instruction": f"Add {i} and {i + 1}.", "input": "", "output": str(2 * i + 1)} for i in range(32)]
(data / "alpaca.json").write_text(json.dumps(rows))
pairs = [{"chosen": [{"role": "user", "content": f"Add {i} and {i + 1}."}, {"role": "assistant", "content": str(2 * i + 1)}],
          "rejected": [{"role": "user", "content": f"Add {i} and {i + 1}."}, {"role": "assistant", "content": str(2 * i)}]}
         for i in range(32)]
(data / "pairs.json").write_text(json.dumps(pairs))
torch.manual_seed(0)
llama = llama3_2(vocab_size=151936, num_layers=1, num_heads=2, num_kv_heads=1, embed_dim=32, intermediate_dim=64, max_seq_len=128)
torch.save(llama.state_dict(), data / "ckpt" / "llama3_2.pt")
torch.manual_seed(0)
critic = mistral_classifier(num_classes=1, vocab_size=151936, num_layers=1, num_heads=2, num_kv_heads=1, embed_dim=32,
                            intermediate_dim=64, max_seq_len=128)
torch.save(critic.state_dict(), data / "ckpt" / "classifier.pt")
(data / "prompts.json").write_text(json.dumps([{"prompt": f"Count from {i} to {i + 3}:"} for i in range(32)]))
"""
_TORCHTUNE_MODEL = ("model.vocab_size=151936", "model.num_layers=1", "model.num_heads=2", "model.num_kv_heads=1",
                    "model.embed_dim=32", "model.intermediate_dim=64", "model.max_seq_len=128")
# compile=True: the recipe's own switch (cfg.compile; the project's YAML says False). The port's
# training.compile_model / compile_loss then compile on the emulated device with the backend porter
# gave them (NRN116: TORCH_COMPILE_BACKEND=neuron on a neuron host); left off, the port runs op by op
# on Trainium and the check fails it as "nothing compiled". The original runs eagerly either way.
_TORCHTUNE_COMMON = (
    "output_dir={data}/out", *_TORCHTUNE_MODEL,
    "tokenizer.path={data}/vocab.json", "tokenizer.merges_file={data}/merges.txt", "tokenizer.max_seq_len=64",
    "checkpointer._component_=torchtune.training.FullModelTorchTuneCheckpointer", "checkpointer.checkpoint_dir={data}/ckpt",
    "checkpointer.checkpoint_files=[model.pt]", "dataset._component_=torchtune.datasets.alpaca_dataset",
    "dataset.source=json", "dataset.data_files={data}/alpaca.json", "dataset.split=train", "seed=0",
    "max_steps_per_epoch=4", "gradient_accumulation_steps=1", "log_peak_memory_stats=False", "compile=True",
)
_TORCHTUNE_QWEN = ("--config", "configs/qwen2_5/0.5B_full_single_device.yaml",
                   "model._component_=torchtune.models.qwen2.qwen2", *_TORCHTUNE_COMMON)
# LoRA: the project's Qwen2.5 LoRA config; its LoRA keys (q/v/output projections and the MLP, rank 32)
# kept, the base Qwen2 of the same one-layer sizes (torchtune's lora_qwen2 builder), which loads the
# same base checkpoint (the recipe loads it with strict=False and checks only LoRA keys are missing).
_TORCHTUNE_LORA = ("--config", "configs/qwen2_5/0.5B_lora_single_device.yaml",
                   "model._component_=torchtune.models.qwen2.lora_qwen2", *_TORCHTUNE_COMMON)
_TORCHTUNE_FULL_DIST = ("--config", "configs/qwen2_5/0.5B_full.yaml",
                        "model._component_=torchtune.models.qwen2.qwen2", *_TORCHTUNE_COMMON)
_TORCHTUNE_LORA_DIST = ("--config", "configs/qwen2_5/0.5B_lora.yaml",
                        "model._component_=torchtune.models.qwen2.lora_qwen2", *_TORCHTUNE_COMMON)
# Knowledge distillation: the project's Qwen2 1.5B->0.5B KD configs; student the one-layer LoRA Qwen2, teacher
# the same one-layer Qwen2 loading the same synthetic checkpoint (the recipe only reads the teacher's logits).
_TORCHTUNE_TEACHER = ("teacher_model._component_=torchtune.models.qwen2.qwen2",
                      *(f"teacher_{kv}" for kv in _TORCHTUNE_MODEL),
                      "teacher_checkpointer._component_=torchtune.training.FullModelTorchTuneCheckpointer",
                      "teacher_checkpointer.checkpoint_dir={data}/ckpt", "teacher_checkpointer.checkpoint_files=[model.pt]")
_TORCHTUNE_KD_DIST = ("--config", "configs/qwen2/1.5_to_0.5B_KD_lora_distributed.yaml",
                      "model._component_=torchtune.models.qwen2.lora_qwen2", *_TORCHTUNE_COMMON, *_TORCHTUNE_TEACHER)
_TORCHTUNE_KD = ("--config", "configs/qwen2/1.5_to_0.5B_KD_lora_single_device.yaml",
                 "model._component_=torchtune.models.qwen2.lora_qwen2", *_TORCHTUNE_COMMON, *_TORCHTUNE_TEACHER)
# QAT: the project's full QAT config (Llama3 8B there) with the one-layer Qwen2, its tokenizer, and the
# config's own quantizer (Int8DynActInt4WeightQATQuantizer) at a group size the 32-wide layers divide.
# QAT + LoRA: the config's own model family, Llama3.2 (torchtune's lora_llama3_2 builder, the config's LoRA
# keys, tied embeddings as in Llama3.2 1B) of the same one-layer sizes, loading _TORCHTUNE_MAKE's llama3_2.pt.
# Not the Qwen2: QATLoRALinear has no bias (torchtune/modules/peft/lora.py:272-273 means to raise "Bias is
# not supported in QAT + LoRA yet" but never raises) and Qwen2's q/v projections have one, so
# swap_lora_linear_with_qat drops them and loading the checkpoint's q_proj.bias/v_proj.bias crashed in
# load_from_full_model_state_dict (torchtune/training/_distributed.py:256, qat_lora_finetune_distributed.py:550).
_TORCHTUNE_QAT_LORA = ("--config", "configs/llama3_2/1B_qat_lora.yaml", "model._component_=torchtune.models.llama3_2.lora_llama3_2",
                       "tokenizer._component_=torchtune.models.qwen2.qwen2_tokenizer",
                       *(a for a in _TORCHTUNE_COMMON if not a.startswith("checkpointer.checkpoint_files=")),
                       "checkpointer.checkpoint_files=[llama3_2.pt]",
                       "quantizer.groupsize=32", "compile=False")  # the recipe refuses compile (qat_lora_finetune_distributed.py:153-155)
# PPO: the project's Mistral PPO config with the one-layer Qwen2 as policy and reference (model.pt), and for
# the reward and value models (its reward_and_value_model: torchtune's mistral_classifier, one output) a
# one-layer classifier of the same sizes (_TORCHTUNE_MAKE's classifier.pt), all through
# FullModelTorchTuneCheckpointer; the Qwen2 tokenizer files, whose end tokens stop generation
# (<|im_end|> 151645, <|endoftext|> 151643, for the config's Mistral ids); text_completion_dataset on a
# 32-prompt JSON file (its "prompt" column, as the config's sentiment prompts). torch.optim.AdamW for the
# config's bitsandbytes PagedAdamW (CUDA-only: the original could not run here) and optimizer_in_bwd=False
# (per-parameter optimizers stepped in backward hooks: the check counts every one of them as a step).
# 4 prompts per trajectory, 2 per PPO step: two optimizer steps per trajectory; 8 generated tokens.
_PPO_SIZES = tuple(kv.removeprefix("model.") for kv in _TORCHTUNE_MODEL)
_TORCHTUNE_PPO = (
    "--config", "configs/mistral/7B_full_ppo_low_memory.yaml", "output_dir={data}/out",
    "tokenizer._component_=torchtune.models.qwen2.qwen2_tokenizer", "tokenizer.path={data}/vocab.json",
    "tokenizer.merges_file={data}/merges.txt", "tokenizer.max_seq_len=64",
    "dataset.source=json", "dataset.data_files={data}/prompts.json", "dataset.split=train",
    "policy_model._component_=torchtune.models.qwen2.qwen2", *(f"policy_model.{kv}" for kv in _PPO_SIZES),
    *(f"reward_and_value_model.{kv}" for kv in _PPO_SIZES),
    *(f"{c}.{kv}" for c in ("checkpointer", "ref_policy_checkpointer") for kv in (
        "_component_=torchtune.training.FullModelTorchTuneCheckpointer", "checkpoint_dir={data}/ckpt",
        "checkpoint_files=[model.pt]")),
    *(f"{c}.{kv}" for c in ("value_checkpointer", "reward_checkpointer") for kv in (
        "_component_=torchtune.training.FullModelTorchTuneCheckpointer", "checkpoint_dir={data}/ckpt",
        "checkpoint_files=[classifier.pt]")),
    "stop_token_ids=[151645,151643]", "optimizer._component_=torch.optim.AdamW", "optimizer_in_bwd=False",
    "seed=0", "batch_size=4", "forward_batch_size=4", "ppo_batch_size=2", "num_steps=16", "max_generated_tokens=8",
    "min_response_length=2", "log_peak_memory_stats=False", "compile=True",
)
# The QAT recipes refuse compile=True at their own line: checked eagerly (Recipe.eager).
_QAT_EAGER = ("Compile is not yet supported for QAT", "the recipe refuses compile=True (\"Compile is not yet supported "
              "for QAT\"): it runs eagerly by design, on CUDA as on Neuron; checked with --allow-eager, so the port is "
              "proven to run and train the same eagerly, not compiled")
_TORCHTUNE_QAT = ("--config", "configs/llama3/8B_qat_full.yaml", "model._component_=torchtune.models.qwen2.qwen2",
                  "tokenizer._component_=torchtune.models.qwen2.qwen2_tokenizer", *_TORCHTUNE_COMMON,
                  "quantizer.groupsize=32", "compile=False")  # the recipe refuses compile (qat_distributed.py:139)
# DPO: the project's Llama3.1 DPO configs with the one-layer Qwen2 (LoRA or full), its tokenizer, and torchtune's
# preference_dataset on a 32-pair JSON file (chosen/rejected conversations, _TORCHTUNE_MAKE's pairs.json) for the
# Stack Exchange pairs the config downloads; the full recipe's reference model loads the same checkpoint.
_TORCHTUNE_DPO = ("tokenizer._component_=torchtune.models.qwen2.qwen2_tokenizer", *_TORCHTUNE_COMMON,
                  "dataset._component_=torchtune.datasets.preference_dataset", "dataset.data_files={data}/pairs.json")
_TORCHTUNE_REF = ("ref_checkpointer._component_=torchtune.training.FullModelTorchTuneCheckpointer",
                  "ref_checkpointer.checkpoint_dir={data}/ckpt", "ref_checkpointer.checkpoint_files=[model.pt]")
# torchrl publishes no sdist (pip finds none for any version) and its wheel carries the scripts without
# their YAML: the config is written here with exactly the keys the script (and its utils) read, the
# project's defaults (pytorch/rl's sota-implementations YAML) for the choices (env, device null,
# compile off, losses), small sizes, and logging and checkpoints off.
_TORCHRL_CONFIG = ("{name}.yaml: the Hydra config {script} reads (its keys from the script and its utils; "
                   "the project's own defaults, small sizes, logger and checkpoints off)")
# _COMPILE_ON: compile.compile is the script's own switch (off in the project's YAML). The port made its
# torch.compile(update) a neuron compile; left off, the port runs op by op on Trainium and the check
# fails it as "nothing compiled". On, the check proves the compiled update (the original runs eagerly
# in the check either way).
_TORCHRL_COMPILED = " (compile.compile: True, the script's own switch: see _COMPILE_ON)"
# torchrl's offline scripts read D4RL through D4RLExperienceReplay(direct_download=True), which loads
# <root>/<dataset> as a memory-mapped TensorDict when that folder exists and downloads the dataset's HDF5
# file otherwise (torchrl/data/datasets/d4rl.py:176-217; root: $HOME/.cache/torchrl/d4rl unless the
# script passes one). The maker writes that folder under HOME={data}/home: D4RL's HDF5 fields
# (observations, actions, rewards, terminals, timeouts; float32 and bool as in D4RL's files) of the env's
# sizes, seeded random values, an episode end every 100 rows, put through the library's own processing
# (_process_data_from_env, then :207-214: zeroed final observations, split_trajectories for a script that
# asks for split_trajs, memmap), so the layout on disk is the one the library writes after a download.
_D4RL_MAKE = """
import sys
from pathlib import Path
import numpy as np, torch
from tensordict import TensorDict
from torchrl.data.datasets.d4rl import D4RLExperienceReplay
g = np.random.default_rng(0)
raw = TensorDict({
    "observations": torch.from_numpy(g.standard_normal((ROWS, OBS), dtype=np.float32)),
    "actions": torch.from_numpy(g.uniform(-1, 1, (ROWS, ACT)).astype(np.float32)),
    "rewards": torch.from_numpy(g.standard_normal(ROWS, dtype=np.float32)),
    "terminals": torch.zeros(ROWS, dtype=torch.bool),
    "timeouts": torch.from_numpy(np.arange(1, ROWS + 1) % 100 == 0),
}, batch_size=[ROWS])
reader = D4RLExperienceReplay.__new__(D4RLExperienceReplay)  # its processing only: no download, no storage
reader.use_truncated_as_done = True
dataset = reader._process_data_from_env(raw)
dataset["next", "observation"][dataset["next", "done"].squeeze()] = 0
if SPLIT:
    from torchrl.collectors.utils import split_trajectories
    dataset = split_trajectories(dataset)
    dataset["next", "done"][:, -1] = True
dataset.memmap(Path(sys.argv[1]).joinpath("home", *UNDER_HOME, DATASET))
"""


def d4rl_recipe(config_name: str, config: dict[str, Any], dataset: str, sizes: tuple[int, int], why: str,
                rows: int = 1000, split: bool = False, root: tuple[str, ...] = (".cache", "torchrl", "d4rl")) -> Recipe:
    """An offline script's Hydra config and its D4RL dataset (``dataset``: the config's id; ``sizes``: the
    observation and action sizes of the env the config names, which the script builds its networks from;
    ``split``: the script's split_trajs; ``root``: where under HOME the script's D4RLExperienceReplay reads)."""
    head = f"DATASET, OBS, ACT, ROWS, SPLIT, UNDER_HOME = {dataset!r}, {sizes[0]}, {sizes[1]}, {rows}, {split}, {root!r}\n"
    return dataclasses.replace(hydra_recipe(config_name, config, why), make=head + _D4RL_MAKE,
                               env=(("HOME", "{data}/home"),))


# The decision-transformer configs' shared sections (dt_config.yaml and odt_config.yaml agree on them), a
# one-layer transformer and small sizes; HalfCheetah-v4 through gym (their backend: "D4RL uses gym").
_DT_ENV = {"name": "HalfCheetah-v4", "task": "", "library": "gym", "stacked_frames": 20, "inference_context": 5,
           "n_samples_stats": 2000, "frame_skip": 1, "num_train_envs": 1, "num_eval_envs": 1, "reward_scaling": 0.001,
           "target_return_mode": "reduce", "eval_target_return": 6000, "collect_target_return": 12000, "backend": "gym"}
_DT_REPLAY_BUFFER = {"dataset": "halfcheetah-medium-v2", "batch_size": 16, "prb": 0, "stacked_frames": 20,
                     "buffer_prefetch": 64, "capacity": 1000, "scratch_dir": None, "device": "cpu", "prefetch": 3}
_DT_TRANSFORMER = {"n_embd": 32, "n_layer": 1, "n_head": 1, "n_inner": 64, "activation": "relu", "n_positions": 1024,
                   "resid_pdrop": 0.1, "attn_pdrop": 0.1}
_D4RL_WHY = (" and a synthetic {dataset} in the layout D4RLExperienceReplay reads from its download cache (see "
             "_D4RL_MAKE), {env}'s sizes")


# cql_offline reads Minari's dataset through MinariExperienceReplay(download=True), which loads
# $HOME/.cache/torchrl/minari/<dataset> (its memmap and env_metadata.json) when that folder exists and
# downloads the dataset from Minari's servers otherwise (torchrl/data/datasets/minari_data.py:213-230). The
# maker writes that folder as discrete_cql_offline builds its own dataset (cql/utils.py's
# make_offline_discrete_replay_buffer): random-policy episodes of the config's env recorded by Minari's
# DataCollector into a local Minari dataset (under HOME={data}/home), which the library's own
# load_from_local_minari path then processes into its cache, as it does a downloaded one.
_MINARI_MAKE = """
import gymnasium as gym, minari
from minari import DataCollector
from torchrl.data.datasets.minari_data import MinariExperienceReplay
env = DataCollector(gym.make(ENV))
for episode in range(EPISODES):
    env.reset(seed=episode)
    while True:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
env.create_dataset(dataset_id=DATASET, algorithm_name="Random-Policy")
MinariExperienceReplay(dataset_id=DATASET, batch_size=1, load_from_local_minari=True)
minari.delete_dataset(DATASET)
"""


RECIPES: dict[str, Recipe] = {
    # The published 0.6.1 wheel has no torchtune/dev package: the recipe imports torchtune.dev.grpo.rewards
    # (grpo_full_finetune_distributed.py:24) and its GSM8K data and reward code from there.
    "torchtune-0.6.1/recipes/dev/grpo_full_finetune_distributed.py": Recipe(
        needs="torchtune.dev.grpo (its rewards and dataset, grpo_full_finetune_distributed.py:24), which the published "
              "torchtune 0.6.1 wheel does not ship, and a config (none in the archive)"),
    "torchtune-0.6.1/recipes/full_finetune_single_device.py": Recipe(
        _TORCHTUNE_QWEN, make=_TORCHTUNE_MAKE,
        why="the project's Qwen2.5 config with a 1-layer synthetic checkpoint, byte-level tokenizer files and an "
            "Alpaca JSON (what its checkpointer, tokenizer and dataset read; see _TORCHTUNE_MAKE); compile=True "
            "(see _TORCHTUNE_COMMON)"),
    "torchtune-0.6.1/recipes/lora_finetune_single_device.py": Recipe(
        _TORCHTUNE_LORA, make=_TORCHTUNE_MAKE,
        why="the project's Qwen2.5 LoRA config on the same synthetic base checkpoint, tokenizer files and Alpaca "
            "JSON as full_finetune_single_device (see _TORCHTUNE_LORA); compile=True (see _TORCHTUNE_COMMON)"),
    # The distributed recipes on 2 ranks (torchrun; FSDP2 over the emulated device's collectives), the
    # project's multi-device Qwen2.5 configs, the same synthetic files.
    "torchtune-0.6.1/recipes/full_finetune_distributed.py": Recipe(
        _TORCHTUNE_FULL_DIST, make=_TORCHTUNE_MAKE, nproc=2,
        why="the project's multi-device Qwen2.5 config on 2 ranks, the synthetic files of full_finetune_single_device "
            "(see _TORCHTUNE_MAKE); compile=True (see _TORCHTUNE_COMMON)"),
    "torchtune-0.6.1/recipes/lora_finetune_distributed.py": Recipe(
        _TORCHTUNE_LORA_DIST, make=_TORCHTUNE_MAKE, nproc=2,
        why="the project's multi-device Qwen2.5 LoRA config on 2 ranks, the synthetic files of "
            "full_finetune_single_device (see _TORCHTUNE_LORA); compile=True (see _TORCHTUNE_COMMON)"),
    # The multi-dataset LoRA recipe (torchdata nodes, dev/): its only config in the archive is a Llama 3.2
    # Vision one (dev/11B_lora_multi_dataset.yaml, image datasets from the Hub); it reads the keys of
    # lora_finetune_distributed.py but `dataloader` and a `datasets` list (each entry: load_hf_dataset's
    # arguments, a message `transform` and a `weight`; lora_finetune_distributed_multi_dataset.py:586-628).
    # So the project's multi-device Qwen2.5 LoRA config of lora_finetune_distributed (put beside the script, as
    # for early-exit below), with two weighted
    # entries of the same synthetic Alpaca JSON (AlpacaToMessages, the transform alpaca_dataset uses) mixed by
    # the recipe's get_multi_dataset; no worker processes or pinned memory (a CPU run).
    "torchtune-0.6.1/recipes/dev/lora_finetune_distributed_multi_dataset.py": Recipe(
        (*_TORCHTUNE_LORA_DIST, "dataloader.shuffle=True", "dataloader.collate_fn=torchtune.data.padded_collate_sft",
         "dataloader.parallel_method=thread", "dataloader.num_workers=0", "dataloader.pin_memory=False",
         "dataloader.prefetch_factor=2",
         "datasets=[" + ", ".join(
             "{source: json, data_files: {data}/alpaca.json, split: train, name: " + name
             + ", transform: {_component_: torchtune.data.AlpacaToMessages}, weight: " + weight + "}"
             for name, weight in (("first", "1.0"), ("second", "0.5"))) + "]"),
        make=_TORCHTUNE_MAKE, nproc=2, beside=(("recipes/configs/qwen2_5/0.5B_lora.yaml", "configs/qwen2_5/0.5B_lora.yaml"),),
        why="the project's multi-device Qwen2.5 LoRA config of lora_finetune_distributed beside the script, on 2 ranks, with a `datasets` "
            "list of two weighted Alpaca JSON entries and a thread `dataloader` in place of its Vision config's image "
            "datasets (the synthetic files of full_finetune_single_device, see _TORCHTUNE_MAKE); compile=True (see "
            "_TORCHTUNE_COMMON)"),
    # Early-exit finetune: the archive ships no config for it (configs/dev has none); it reads the keys of
    # full_finetune_distributed.py (early_exit_loss and layer_dropout through cfg.get,
    # early_exit_finetune_distributed.py:245-257), so the project's multi-device Qwen2.5 full config, put beside
    # the script (recipes/dev/configs/, then ported with it: device: cuda -> neuron), with the early-exit loss on
    # at every layer (":", quoted: the override's value is read as YAML) of the one-layer model, and a mean-reduced
    # loss (torch.nn.CrossEntropyLoss for the config's chunked one: the recipe asserts `reduction == "mean"` when the
    # early-exit loss is on, early_exit_finetune_distributed.py:704-707; the project's own early-exit config,
    # dev/7B_full_early_exit.yaml in its recipe registry, is not in the wheel).
    "torchtune-0.6.1/recipes/dev/early_exit_finetune_distributed.py": Recipe(
        (*_TORCHTUNE_FULL_DIST, "early_exit_loss.layers=\":\"", "early_exit_loss.scale=1.0",
         "loss._component_=torch.nn.CrossEntropyLoss"), make=_TORCHTUNE_MAKE, nproc=2,
        beside=(("recipes/configs/qwen2_5/0.5B_full.yaml", "configs/qwen2_5/0.5B_full.yaml"),),
        why="the project's multi-device Qwen2.5 full config beside the script (it ships none for this recipe, which "
            "reads the same keys) with the early-exit loss at every layer, the synthetic files of "
            "full_finetune_single_device (see _TORCHTUNE_MAKE); compile=True (see _TORCHTUNE_COMMON)"),
    "torchtune-0.6.1/recipes/ppo_full_finetune_single_device.py": Recipe(
        _TORCHTUNE_PPO, make=_TORCHTUNE_MAKE,
        why="the project's PPO config with one-layer policy, reference, reward and value models and a prompt JSON "
            "(see _TORCHTUNE_PPO); compile=True, the config's own choice"),
    "torchtune-0.6.1/recipes/knowledge_distillation_distributed.py": Recipe(
        _TORCHTUNE_KD_DIST, make=_TORCHTUNE_MAKE, nproc=2,
        why="the project's Qwen2 KD config on 2 ranks: student and teacher of one layer on the synthetic files of "
            "full_finetune_single_device (see _TORCHTUNE_TEACHER)"),
    "torchtune-0.6.1/recipes/knowledge_distillation_single_device.py": Recipe(
        _TORCHTUNE_KD, make=_TORCHTUNE_MAKE,
        why="the project's single-device Qwen2 KD config, student and teacher of one layer (see _TORCHTUNE_TEACHER)"),
    "torchtune-0.6.1/recipes/qat_distributed.py": Recipe(
        _TORCHTUNE_QAT, make=_TORCHTUNE_MAKE, nproc=2, eager=_QAT_EAGER,
        why="the project's full QAT config on 2 ranks with the one-layer Qwen2 and its tokenizer (see _TORCHTUNE_QAT)"),
    "torchtune-0.6.1/recipes/lora_dpo_single_device.py": Recipe(
        ("--config", "configs/llama3_1/8B_lora_dpo_single_device.yaml", "model._component_=torchtune.models.qwen2.lora_qwen2",
         *_TORCHTUNE_DPO), make=_TORCHTUNE_MAKE, why="the project's LoRA DPO config with the one-layer Qwen2 (see _TORCHTUNE_DPO)"),
    "torchtune-0.6.1/recipes/lora_dpo_distributed.py": Recipe(
        ("--config", "configs/llama3_1/8B_lora_dpo.yaml", "model._component_=torchtune.models.qwen2.lora_qwen2",
         *_TORCHTUNE_DPO), make=_TORCHTUNE_MAKE, nproc=2,
        why="the project's LoRA DPO config on 2 ranks with the one-layer Qwen2 (see _TORCHTUNE_DPO)"),
    "torchtune-0.6.1/recipes/full_dpo_distributed.py": Recipe(
        ("--config", "configs/llama3_1/8B_full_dpo.yaml", "model._component_=torchtune.models.qwen2.qwen2",
         *_TORCHTUNE_DPO, *_TORCHTUNE_REF), make=_TORCHTUNE_MAKE, nproc=2,
        why="the project's full DPO config on 2 ranks with the one-layer Qwen2 as policy and reference (see _TORCHTUNE_DPO)"),
    "torchtune-0.6.1/recipes/qat_lora_finetune_distributed.py": Recipe(
        _TORCHTUNE_QAT_LORA, make=_TORCHTUNE_MAKE, nproc=2, eager=_QAT_EAGER,
        why="the project's Llama3.2 QAT LoRA config on 2 ranks with a one-layer LoRA Llama3.2 and the Qwen2 tokenizer "
            "(see _TORCHTUNE_QAT_LORA)"),
    "torchtitan-0.3.0/torchtitan/experiments/forge/example_train.py": Recipe(
        needs="a torchtitan job config with a Hugging Face tokenizer (downloaded assets) and the C4 dataset"),
    # --dataset synthetic: the script's own SyntheticBanditEnv (the others download OpenML data)
    "torchrl-0.14.1/sota-implementations/bandits/dqn.py": Recipe(
        ("--dataset", "synthetic", "--n_steps", "4", "--batch_size", "32", "--n_cells", "16")),
    **{f"torchrl-0.14.1/benchmarks/{name}.py": Recipe(
        needs=f"a CUDA device: a CUDA-event timing / memory benchmark (no optimizer) that returns early on any other device ({name}.py, `if device.type != \"cuda\"`)")
       for name in ("bench_rnn_backward", "bench_rnn_recompute_memory")},
    # CartPole-v1 is gymnasium's pure-Python classic-control task: the script's own default env.
    "torchrl-0.14.1/sota-implementations/dqn/dqn_cartpole.py": hydra_recipe("config_cartpole", {
        "device": None, "env": {"env_name": "CartPole-v1"},
        "collector": {"total_frames": 640, "frames_per_batch": 32, "eps_start": 1.0, "eps_end": 0.05,
                      "annealing_frames": 320, "init_random_frames": 64},
        "buffer": {"buffer_size": 1000, "batch_size": 16},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "test_interval": 100000,
                   "num_test_episodes": 1, "video": False},
        "optim": {"lr": 2.5e-4}, "loss": {"gamma": 0.99, "hard_update_freq": 50, "num_updates": 2},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        "checkpoint": {"path": None, "interval": 0, "resume": False, "format": "archive", "strict": "error"},
    }, why=_TORCHRL_CONFIG.format(script="dqn_cartpole.py", name="config_cartpole") + _TORCHRL_COMPILED),
    "torchrl-0.14.1/sota-implementations/discrete_sac/discrete_sac.py": hydra_recipe("config", {
        "env": {"name": "CartPole-v1", "task": "", "library": "gymnasium", "seed": 42, "max_episode_steps": 500},
        "collector": {"total_frames": 640, "init_random_frames": 64, "frames_per_batch": 32,
                      "reset_at_each_iter": False, "device": None, "env_per_collector": 1},
        "replay_buffer": {"prb": 0, "size": 1000, "scratch_dir": None},
        "optim": {"utd_ratio": 1.0, "gamma": 0.99, "batch_size": 16, "lr": 3.0e-4, "weight_decay": 0.0,
                  "target_update_polyak": 0.995, "target_entropy_weight": 0.2, "loss_function": "l2"},
        "network": {"hidden_sizes": [32, 32], "activation": "relu", "device": None},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "mode": "offline", "eval_iter": 100000, "video": False},
    }, why=_TORCHRL_CONFIG.format(script="discrete_sac.py", name="config") + _TORCHRL_COMPILED),
    # The CartPole-v1 (gymnasium) scripts of cql/ and iql/: their projects' YAML names CartPole-v1.
    "torchrl-0.14.1/sota-implementations/cql/discrete_cql_online.py": hydra_recipe("discrete_online_config", {
        "env": {"name": "CartPole-v1", "task": "", "backend": "gymnasium", "max_episode_steps": 200, "seed": 0},
        "collector": {"frames_per_batch": 32, "total_frames": 640, "init_random_frames": 64, "device": None,
                      "max_frames_per_traj": 200, "annealing_frames": 320, "eps_start": 1.0, "eps_end": 0.01},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000, "video": False},
        "replay_buffer": {"prb": 0, "size": 1000, "scratch_dir": None},
        "optim": {"utd_ratio": 1, "device": None, "lr": 1e-3, "weight_decay": 0.0, "batch_size": 16},
        "model": {"hidden_sizes": [32, 32], "activation": "relu"},
        "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="discrete_cql_online.py", name="discrete_online_config") + _TORCHRL_COMPILED),
    # Pendulum-v1 (gymnasium's classic control): cql_online's own default env in the project's YAML; with_lagrange:
    # True as there (the script reads loss_alpha_prime, which CQLLoss makes only with the Lagrange term).
    "torchrl-0.14.1/sota-implementations/cql/cql_online.py": hydra_recipe("online_config", {
        "env": {"name": "Pendulum-v1", "task": "", "seed": 0, "train_num_envs": 1, "eval_num_envs": 1,
                "backend": "gymnasium"},
        "collector": {"frames_per_batch": 32, "total_frames": 640, "init_random_frames": 64, "device": "cpu",
                      "max_frames_per_traj": 200},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "log_interval": 100000, "mode": "offline", "eval_steps": 200, "video": False},
        "replay_buffer": {"prb": 0, "size": 1000},
        "optim": {"utd_ratio": 1, "device": None, "actor_lr": 3e-4, "critic_lr": 3e-4, "weight_decay": 0.0,
                  "batch_size": 16},
        "model": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1},
        "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005, "temperature": 1.0, "min_q_weight": 1.0,
                 "max_q_backup": False, "deterministic_backup": False, "num_random": 10, "with_lagrange": True,
                 "lagrange_thresh": 10.0},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="cql_online.py", name="online_config") + _TORCHRL_COMPILED),
    # The continuous-control "config" scripts (ddpg, sac, tqc, td3): Pendulum-v1 (gymnasium's classic control,
    # pure Python, 3-dim observations: a fast check) in place of the project's MuJoCo HalfCheetah; the keys each
    # script and its utils read (the network and optim sections differ by algorithm), devices null as in the
    # project's YAML, small sizes.
    **{f"torchrl-0.14.1/sota-implementations/{name}.py": hydra_recipe("config", {
        "env": {"name": "Pendulum-v1", "task": "", "library": "gymnasium", "max_episode_steps": 200, "seed": 0},
        "collector": {"total_frames": 640, "init_random_frames": 64, "frames_per_batch": 32, "env_per_collector": 1,
                      "device": None, "reset_at_each_iter": False},
        "replay_buffer": {"size": 1000, "prb": 0, "scratch_dir": None},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000, "video": False, "num_eval_envs": 1},
        "network": {"activation": "relu", "device": None, **network},
        "optim": {"utd_ratio": 1, "gamma": 0.99, "lr": 3e-4, "weight_decay": 0.0, "batch_size": 16,
                  "target_update_polyak": 0.995, "device": None, **optim},
        **extra,
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script=f"{name.split('/')[1]}.py", name="config") + " (Pendulum-v1)"
         + _TORCHRL_COMPILED) for name, network, optim, extra in (
        ("ddpg/ddpg", {"hidden_sizes": [32, 32], "noise_type": "ou"}, {"loss_function": "l2"}, {}),
        ("sac/sac", {"hidden_sizes": [32, 32], "default_policy_scale": 1.0, "scale_lb": 0.1},
         {"loss_function": "l2", "adam_eps": 1e-8, "alpha_init": 1.0}, {}),
        ("tqc/tqc", {"actor_hidden_sizes": [32, 32], "critic_hidden_sizes": [32, 32], "default_policy_scale": 1.0,
                     "scale_lb": 0.1}, {"adam_eps": 1e-8, "alpha_init": 1.0},
         {"loss": {"num_quantiles": 25, "num_qvalue_nets": 2, "top_quantiles_to_drop_per_net": 2}}),
        ("td3/td3", {"hidden_sizes": [32, 32]}, {"loss_function": "l2", "adam_eps": 1e-8, "noise_clip": 0.5,
                                                 "policy_noise": 0.2, "policy_update_delay": 2}, {}),
    )},
    # iql_online: discrete_iql's keys with the continuous actor's (default_policy_scale, scale_lb) and the soft
    # update's tau; Pendulum-v1, the project's own default for its online config.
    "torchrl-0.14.1/sota-implementations/iql/iql_online.py": hydra_recipe("online_config", {
        "env": {"name": "Pendulum-v1", "task": "", "seed": 0, "train_num_envs": 1, "eval_num_envs": 1,
                "backend": "gymnasium"},
        "collector": {"frames_per_batch": 32, "total_frames": 640, "init_random_frames": 64, "device": None,
                      "max_frames_per_traj": 200},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000, "video": False},
        "replay_buffer": {"prb": 0, "size": 1000},
        "optim": {"utd_ratio": 1, "device": None, "lr": 3e-4, "weight_decay": 0.0, "batch_size": 16},
        "model": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1},
        "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005, "temperature": 3.0, "expectile": 0.7},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="iql_online.py", name="online_config") + _TORCHRL_COMPILED),
    "torchrl-0.14.1/sota-implementations/iql/discrete_iql.py": hydra_recipe("discrete_iql", {
        "env": {"name": "CartPole-v1", "task": "", "seed": 0, "train_num_envs": 1, "eval_num_envs": 1,
                "backend": "gymnasium"},
        "collector": {"frames_per_batch": 32, "total_frames": 640, "init_random_frames": 64, "device": None,
                      "max_frames_per_traj": 200},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000, "video": False},
        "replay_buffer": {"prb": 0, "size": 1000},
        "optim": {"utd_ratio": 1, "device": None, "lr": 3e-4, "weight_decay": 0.0, "batch_size": 16},
        "model": {"hidden_sizes": [32, 32], "activation": "relu"},
        "loss": {"loss_function": "l2", "gamma": 0.99, "hard_update_interval": 10, "temperature": 100, "expectile": 0.8},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="discrete_iql.py", name="discrete_iql") + _TORCHRL_COMPILED),
    # iql_offline: the keys of the project's offline_config.yaml (pytorch/rl sota-implementations/iql), small
    # sizes, HalfCheetah-v4 (gymnasium + MuJoCo from DEPS) for the evaluation env, its D4RL id.
    "torchrl-0.14.1/sota-implementations/iql/iql_offline.py": d4rl_recipe("offline_config", {
        "env": {"name": "HalfCheetah-v4", "task": "", "exp_name": "check", "n_samples_stats": 1000, "seed": 0,
                "backend": "gymnasium"},
        "logger": {"backend": None, "project_name": "check", "exp_name": "check", "group_name": None,
                   "eval_iter": 100000, "eval_steps": 20, "mode": "offline", "eval_envs": 1, "video": False},
        "replay_buffer": {"dataset": "halfcheetah-medium-v2", "batch_size": 16},
        "optim": {"device": None, "lr": 3e-4, "weight_decay": 0.0, "gradient_steps": 100},
        "model": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1},
        "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005, "temperature": 3.0, "expectile": 0.7},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, "halfcheetah-medium-v2", (17, 6), why=_TORCHRL_CONFIG.format(script="iql_offline.py", name="offline_config")
        + _D4RL_WHY.format(dataset="halfcheetah-medium-v2", env="HalfCheetah-v4") + _TORCHRL_COMPILED),
    # td3_bc: the keys the script and its utils read (the project's config.yaml has them), small sizes,
    # HalfCheetah-v4 for the evaluation env, its D4RL id.
    "torchrl-0.14.1/sota-implementations/td3_bc/td3_bc.py": d4rl_recipe("config", {
        "env": {"name": "HalfCheetah-v4", "task": "", "library": "gymnasium", "seed": 42, "max_episode_steps": 1000},
        "replay_buffer": {"dataset": "halfcheetah-medium-v2", "batch_size": 16},
        "optim": {"gradient_steps": 100, "gamma": 0.99, "loss_function": "l2", "lr": 3e-4, "weight_decay": 0.0,
                  "adam_eps": 1e-4, "batch_size": 16, "target_update_polyak": 0.995, "policy_update_delay": 2,
                  "policy_noise": 0.2, "noise_clip": 0.5, "alpha": 2.5},
        "network": {"hidden_sizes": [32, 32], "activation": "relu", "device": None},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "mode": "offline", "eval_iter": 100000, "eval_steps": 20, "eval_envs": 1, "video": False},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, "halfcheetah-medium-v2", (17, 6), why=_TORCHRL_CONFIG.format(script="td3_bc.py", name="config")
        + _D4RL_WHY.format(dataset="halfcheetah-medium-v2", env="HalfCheetah-v4") + _TORCHRL_COMPILED),
    # dt: the keys of the project's dt_config.yaml (pytorch/rl sota-implementations/decision_transformer), a
    # one-layer transformer and small sizes, HalfCheetah-v4 through gym (its backend: "D4RL uses gym"); its
    # buffer reads split trajectories from $HOME/.cache/torchrl/data/d4rl (decision_transformer/utils.py).
    "torchrl-0.14.1/sota-implementations/decision_transformer/dt.py": d4rl_recipe("dt_config", {
        "env": {**_DT_ENV, "noop": 1, "seed": 1},
        "logger": {"backend": None, "project_name": "check", "model_name": "DT", "group_name": None,
                   "exp_name": "check", "pretrain_log_interval": 100000, "fintune_log_interval": 1, "eval_steps": 20,
                   "video": False},
        "replay_buffer": _DT_REPLAY_BUFFER,
        "optim": {"device": None, "lr": 1.0e-4, "weight_decay": 5.0e-4, "batch_size": 16, "pretrain_gradient_steps": 100,
                  "updates_per_episode": 300, "warmup_steps": 100, "clip_grad": 0.25},
        "loss": {"loss_function": "l2"},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        "transformer": _DT_TRANSFORMER,
    }, "halfcheetah-medium-v2", (17, 6), split=True, root=(".cache", "torchrl", "data", "d4rl"),
        why=_TORCHRL_CONFIG.format(script="dt.py", name="dt_config")
        + _D4RL_WHY.format(dataset="halfcheetah-medium-v2", env="HalfCheetah-v4") + _TORCHRL_COMPILED),
    # online_dt: its offline pretraining (the loop the script runs), the keys of the project's odt_config.yaml
    # with dt's small sizes and the optimizer key its utils read (make_odt_optimizer: "lamb", the project's
    # Lamb in decision_transformer/lamb.py); the same D4RL folder as dt.
    "torchrl-0.14.1/sota-implementations/decision_transformer/online_dt.py": d4rl_recipe("odt_config", {
        "env": {**_DT_ENV, "seed": 42},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "model_name": "oDT", "pretrain_log_interval": 100000, "finetune_log_interval": 1, "eval_steps": 20,
                   "video": False},
        "replay_buffer": _DT_REPLAY_BUFFER,
        "optim": {"device": None, "optimizer": "lamb", "lr": 1.0e-4, "weight_decay": 5.0e-4, "batch_size": 16,
                  "pretrain_gradient_steps": 100, "updates_per_episode": 300, "warmup_steps": 100, "clip_grad": 0.25},
        "loss": {"alpha_init": 0.1, "target_entropy": "auto"},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        "transformer": _DT_TRANSFORMER,
    }, "halfcheetah-medium-v2", (17, 6), split=True, root=(".cache", "torchrl", "data", "d4rl"),
        why=_TORCHRL_CONFIG.format(script="online_dt.py", name="odt_config")
        + _D4RL_WHY.format(dataset="halfcheetah-medium-v2", env="HalfCheetah-v4") + _TORCHRL_COMPILED),
    # diffusion_bc: the keys of the project's config.yaml (pytorch/rl sota-implementations/diffusion_bc) with
    # replay_buffer.dataset null, the project's own switch ("set to null to collect demos from env": random
    # rollouts of the env, diffusion_bc/utils.py:112-131) in place of D4RL's download; network.device null,
    # not the YAML's cpu, so the script picks the accelerator itself (get_available_device); small sizes.
    "torchrl-0.14.1/sota-implementations/diffusion_bc/diffusion_bc.py": hydra_recipe("config", {
        "env": {"name": "HalfCheetah-v4", "task": "", "library": "gymnasium", "seed": 42, "max_episode_steps": 100},
        "replay_buffer": {"dataset": None, "demo_episodes": 2, "batch_size": 16},
        "optim": {"gradient_steps": 100, "lr": 1.0e-4, "weight_decay": 0.0, "adam_eps": 1.0e-8, "clip_grad": 1.0},
        "network": {"hidden_sizes": [32, 32], "activation": "silu", "num_steps": 10, "beta_start": 1.0e-4,
                    "beta_end": 0.02, "device": None},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000, "eval_steps": 20, "eval_envs": 1, "video": False},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="diffusion_bc.py", name="config") + " (HalfCheetah-v4; its demonstrations "
        "from the env, replay_buffer.dataset null)" + _TORCHRL_COMPILED),
    # gail: the keys the script and its utils read (the project's config.yaml, with the compile section and
    # gail.device its script reads and the loss's critic_coeff/entropy_coeff spellings), ppo_mujoco's small
    # batches, HalfCheetah-v4 through gym (its backend); the expert demonstrations a synthetic D4RL set.
    "torchrl-0.14.1/sota-implementations/gail/gail.py": d4rl_recipe("config", {
        "env": {"env_name": "HalfCheetah-v4", "seed": 42, "backend": "gym"},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "test_interval": 1000000, "num_test_episodes": 1, "video": False, "mode": "offline"},
        "ppo": {"collector": {"frames_per_batch": 64, "total_frames": 192},
                "optim": {"lr": 3e-4, "weight_decay": 0.0, "anneal_lr": True},
                "loss": {"gamma": 0.99, "mini_batch_size": 32, "ppo_epochs": 1, "gae_lambda": 0.95, "clip_epsilon": 0.2,
                         "anneal_clip_epsilon": False, "critic_coeff": 0.25, "entropy_coeff": 0.0,
                         "loss_critic_type": "l2"}},
        "gail": {"hidden_dim": 32, "lr": 3e-4, "use_grad_penalty": True, "gp_lambda": 10.0, "device": None},
        "replay_buffer": {"dataset": "halfcheetah-expert-v2", "batch_size": 32},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, "halfcheetah-expert-v2", (17, 6), why=_TORCHRL_CONFIG.format(script="gail.py", name="config")
        + _D4RL_WHY.format(dataset="halfcheetah-expert-v2", env="HalfCheetah-v4") + _TORCHRL_COMPILED),
    # The offline CQL scripts: the keys of the project's offline_config.yaml and discrete_offline_config.yaml
    # (pytorch/rl sota-implementations/cql), small sizes. discrete_cql_offline records its own dataset with
    # Minari (random CartPole-v1 episodes); cql_offline's Minari dataset is made so too (see _MINARI_MAKE).
    "torchrl-0.14.1/sota-implementations/cql/cql_offline.py": dataclasses.replace(hydra_recipe("offline_config", {
        "env": {"name": "Hopper-v5", "task": "", "library": "gym", "n_samples_stats": 1000, "seed": 0,
                "backend": "gymnasium"},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "eval_iter": 100000, "eval_steps": 20, "mode": "offline", "eval_envs": 1, "video": False},
        "replay_buffer": {"dataset": "mujoco/hopper/expert-v0", "batch_size": 16},
        "optim": {"device": None, "actor_lr": 3e-4, "critic_lr": 3e-4, "weight_decay": 0.0, "gradient_steps": 100,
                  "policy_eval_start": 2},
        "model": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1},
        "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005, "temperature": 1.0, "min_q_weight": 1.0,
                 "max_q_backup": False, "deterministic_backup": False, "num_random": 10, "with_lagrange": True,
                 "lagrange_thresh": 5.0},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="cql_offline.py", name="offline_config") + " and a Minari dataset of 20 "
        "random Hopper-v5 episodes in the layout MinariExperienceReplay reads from its download cache (see "
        "_MINARI_MAKE)" + _TORCHRL_COMPILED),
        make='ENV, DATASET, EPISODES = "Hopper-v5", "mujoco/hopper/expert-v0", 20\n' + _MINARI_MAKE,
        env=(("HOME", "{data}/home"),)),
    "torchrl-0.14.1/sota-implementations/cql/discrete_cql_offline.py": dataclasses.replace(hydra_recipe(
        "discrete_offline_config", {
            "env": {"name": "CartPole-v1", "task": "", "library": "minari", "n_samples_stats": 1000, "seed": 0,
                    "backend": "gymnasium"},
            "collector": {"frames_per_batch": 32, "total_frames": 640, "multi_step": 0, "init_random_frames": 64,
                          "env_per_collector": 1, "device": None, "max_frames_per_traj": 200, "annealing_frames": 320,
                          "eps_start": 1.0, "eps_end": 0.01},
            "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                       "eval_iter": 100000, "eval_steps": 20, "mode": "offline", "eval_envs": 1, "video": False},
            "replay_buffer": {"env": "CartPole-v1", "dataset": "CartPole-v2-random-v1", "batch_size": 16, "episodes": 20},
            "optim": {"device": None, "lr": 3e-4, "weight_decay": 0.0, "gradient_steps": 100, "policy_eval_start": 2},
            "model": {"hidden_sizes": [32, 32], "activation": "relu"},
            "loss": {"loss_function": "l2", "gamma": 0.99, "tau": 0.005, "temperature": 1.0, "min_q_weight": 1.0,
                     "max_q_backup": False, "deterministic_backup": False, "num_random": 10, "with_lagrange": True,
                     "lagrange_thresh": 5.0, "action_space": "categorical"},
            "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        }, why=_TORCHRL_CONFIG.format(script="discrete_cql_offline.py", name="discrete_offline_config")
        + " (its dataset: 20 random CartPole-v1 episodes it records itself with Minari, under HOME={data}/home, "
        "whose actions are indices: loss.action_space categorical, the key make_discrete_loss reads for it)"
        + _TORCHRL_COMPILED), env=(("HOME", "{data}/home"),), one_at_a_time=True),
    # VMAS (vmas on PyPI, pure torch) is the multi-agent simulator the script steps; "balance" its default.
    "torchrl-0.14.1/sota-implementations/multiagent/mappo_ippo.py": hydra_recipe("mappo_ippo", {
        "seed": 0, "env": {"max_steps": 10, "scenario_name": "balance", "scenario": {"n_agents": 3},
                           "device": None, "vmas_envs": None},
        "model": {"shared_parameters": True, "centralised_critic": True},
        "collector": {"frames_per_batch": 40, "n_iters": 3, "total_frames": None},
        "buffer": {"memory_size": None},
        "loss": {"gamma": 0.9, "lmbda": 0.9, "entropy_eps": 0, "clip_epsilon": 0.2},
        "train": {"num_epochs": 2, "minibatch_size": 20, "lr": 5e-5, "max_grad_norm": 40.0, "device": None},
        "eval": {"evaluation_interval": 1000, "evaluation_episodes": 1},
        "logger": {"backend": None, "project_name": None, "group_name": None},
    }, why=_TORCHRL_CONFIG.format(script="mappo_ippo.py", name="mappo_ippo")),
    # The other VMAS scripts of that folder: the same keys (each script's own extra keys from its YAML:
    # qmix_vdn's loss.mixer_type, sac's action kind; maddpg_iddpg keeps its unshared parameters), the
    # same small sizes (the script derives env.vmas_envs, total_frames and memory_size itself).
    **{f"torchrl-0.14.1/sota-implementations/multiagent/{name}.py": hydra_recipe(name, {
        "seed": 0, "env": {"max_steps": 10, "scenario_name": "balance", "scenario": {"n_agents": 3},
                           "device": None, "vmas_envs": None, **env},
        "model": model,
        "collector": {"frames_per_batch": 40, "n_iters": 3, "total_frames": None},
        "buffer": {"memory_size": None},
        "loss": {"gamma": 0.9, "tau": 0.005, **loss},
        "train": {"num_epochs": 2, "minibatch_size": 20, "lr": 5e-5, "max_grad_norm": grad_norm, "device": None},
        "eval": {"evaluation_interval": 1000, "evaluation_episodes": 1},
        "logger": {"backend": None, "project_name": None, "group_name": None},
    }, why=_TORCHRL_CONFIG.format(script=f"{name}.py", name=name)) for name, env, model, loss, grad_norm in (
        ("iql", {}, {"shared_parameters": True}, {}, 40.0),
        ("qmix_vdn", {}, {"shared_parameters": True}, {"mixer_type": "qmix"}, 40.0),
        ("maddpg_iddpg", {}, {"shared_parameters": False, "centralised_critic": True}, {}, 40.0),
        ("sac", {"continuous_actions": True, "categorical_actions": False},
         {"shared_parameters": True, "centralised_critic": True}, {}, 2.0),
    )},
    # The on-policy MuJoCo scripts (ppo_mujoco, a2c_mujoco): the keys each script and its utils read, backend
    # "gym" (torchrl's GymEnv, the project's default), small batches; ppo_mujoco on Pendulum-v1 (gymnasium's
    # classic control, pure Python), like the other continuous-control recipes. Their update is compiled by
    # the script's own compile_with_warmup (compile.compile: True).
    "torchrl-0.14.1/sota-implementations/ppo/ppo_mujoco.py": hydra_recipe("config_mujoco", {
        "env": {"env_name": "Pendulum-v1", "backend": "gym", "config_overrides": None, "num_envs": 1,
                "batch_mode": "parallel", "normalize_observation": True, "max_episode_steps": 200},
        "collector": {"frames_per_batch": 64, "total_frames": 192},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "test_interval": 1000000, "num_test_episodes": 1, "video": False},
        "optim": {"lr": 3e-4, "device": None, "anneal_lr": True},
        "loss": {"gamma": 0.99, "mini_batch_size": 32, "ppo_epochs": 1, "gae_lambda": 0.95, "clip_epsilon": 0.2,
                 "anneal_clip_epsilon": False, "critic_coeff": 0.25, "entropy_coeff": 0.0, "loss_critic_type": "l2"},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
        "checkpoint": {"path": None, "interval": 0},
    }, why=_TORCHRL_CONFIG.format(script="ppo_mujoco.py", name="config_mujoco") + " (Pendulum-v1)" + _TORCHRL_COMPILED),
    # a2c_mujoco's env ends in DoubleToFloat, which needs MuJoCo's float64 observations: the project's own
    # HalfCheetah-v4 (gymnasium + mujoco from DEPS).
    "torchrl-0.14.1/sota-implementations/a2c/a2c_mujoco.py": hydra_recipe("config_mujoco", {
        "env": {"env_name": "HalfCheetah-v4"},
        "collector": {"frames_per_batch": 64, "total_frames": 192},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "test_interval": 1000000, "num_test_episodes": 1, "video": False},
        "optim": {"lr": 3e-4, "anneal_lr": True},
        "loss": {"gamma": 0.99, "mini_batch_size": 32, "gae_lambda": 0.95, "critic_coeff": 0.25, "entropy_coeff": 0.0,
                 "loss_critic_type": "l2", "device": None},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="a2c_mujoco.py", name="config_mujoco") + " (HalfCheetah-v4)" + _TORCHRL_COMPILED),
    # crossq: the "config" keys of sac/tqc with its batch-norm critic's (batch_norm_momentum, warmup_steps)
    # and Adam's betas, Pendulum-v1 as for the other continuous-control scripts.
    # Six steps: its update_all (actor and critic) first runs at the third update (policy_update_delay 3),
    # the sixth shows the optimizer step it shares with update_qloss compiled once for each.
    "torchrl-0.14.1/sota-implementations/crossq/crossq.py": dataclasses.replace(hydra_recipe("config", {
        "env": {"name": "Pendulum-v1", "task": "", "library": "gymnasium", "max_episode_steps": 200, "seed": 0},
        "collector": {"total_frames": 640, "init_random_frames": 64, "frames_per_batch": 32, "env_per_collector": 1,
                      "device": None},
        "replay_buffer": {"size": 1000, "prb": 0, "scratch_dir": None},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check", "mode": "offline",
                   "eval_iter": 100000},
        "network": {"actor_hidden_sizes": [32, 32], "critic_hidden_sizes": [32, 32], "actor_activation": "relu",
                    "critic_activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1,
                    "batch_norm_momentum": 0.01, "warmup_steps": 100, "device": None},
        "optim": {"utd_ratio": 1, "gamma": 0.99, "lr": 1e-3, "weight_decay": 0.0, "batch_size": 16, "adam_eps": 1e-8,
                  "alpha_init": 1.0, "beta1": 0.5, "beta2": 0.999, "loss_function": "l2", "policy_update_delay": 3},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="crossq.py", name="config") + " (Pendulum-v1)" + _TORCHRL_COMPILED), min_steps=6),
    # rnd_mujoco: PPO with a random-network-distillation bonus on the project's HalfCheetah-v4 (MuJoCo from
    # DEPS), the keys of its YAML (pytorch/rl's sota-implementations/rnd/config_mujoco.yaml: the rnd section's
    # values as there), a2c_mujoco's small batches.
    "torchrl-0.14.1/sota-implementations/rnd/rnd_mujoco.py": hydra_recipe("config_mujoco", {
        "env": {"env_name": "HalfCheetah-v4"},
        "collector": {"frames_per_batch": 64, "total_frames": 192},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "test_interval": 1000000, "num_test_episodes": 1, "video": False},
        "optim": {"lr": 3e-4, "anneal_lr": True, "device": None},
        "loss": {"gamma": 0.99, "mini_batch_size": 32, "ppo_epochs": 1, "gae_lambda": 0.95, "clip_epsilon": 0.2,
                 "anneal_clip_epsilon": False, "critic_coeff": 0.25, "entropy_coeff": 0.0, "loss_critic_type": "l2"},
        "rnd": {"embed_dim": 32, "predictor_lr": 1e-4, "intrinsic_coeff": 1.0, "update_fraction": 0.25, "reward_clip": 5.0},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="rnd_mujoco.py", name="config_mujoco") + " (HalfCheetah-v4)" + _TORCHRL_COMPILED),
    # sac-async: sac's keys with the async collector's (update_freq; its collector process steps the env),
    # Pendulum-v1 as for sac; total_frames -1 as in the project's YAML (the check stops it after --steps).
    # collector.device cpu: with none set, a CUDA host needs 2 GPUs (sac/utils.py:159-160, "Requires >= 2
    # GPUs": the collector takes cuda:1), so a one-GPU user sets it; the project's YAML says cuda:1.
    "torchrl-0.14.1/sota-implementations/sac/sac-async.py": hydra_recipe("config-async", {
        "env": {"name": "Pendulum-v1", "task": "", "library": "gymnasium", "max_episode_steps": 200, "seed": 0},
        "collector": {"total_frames": -1, "init_random_frames": 64, "frames_per_batch": 32, "init_env_steps": 64,
                      "device": "cpu", "env_per_collector": 1, "reset_at_each_iter": False, "update_freq": 32},
        "replay_buffer": {"size": 1000, "prb": 0, "scratch_dir": None},
        "optim": {"utd_ratio": 1.0, "gamma": 0.99, "loss_function": "l2", "lr": 3e-4, "weight_decay": 0.0,
                  "batch_size": 16, "target_update_polyak": 0.995, "alpha_init": 1.0, "adam_eps": 1e-8},
        "network": {"hidden_sizes": [32, 32], "activation": "relu", "default_policy_scale": 1.0, "scale_lb": 0.1,
                    "device": None},
        "logger": {"backend": None, "project_name": "check", "group_name": None, "exp_name": "check",
                   "mode": "offline", "log_freq": 100000, "video": False},
        "compile": {"compile": True, "compile_mode": None, "cudagraphs": False},  # _COMPILE_ON
    }, why=_TORCHRL_CONFIG.format(script="sac-async.py", name="config-async") + " (Pendulum-v1)" + _TORCHRL_COMPILED),
    # pilco: the project's own InvertedPendulum-v5 (gymnasium + MuJoCo from DEPS) would do, but the published
    # script does not run as written: main() binds `logger` only when a backend is set (pilco.py:177-190) and
    # passes it on at :192 (NameError without one), and with one (csv, 2026-12-06 run) the original raises in
    # evaluate_policy, which hands log_scalar the list `test_rollout["episode_reward"][-1].tolist()`
    # (pilco.py:32-40: "float() argument must be ... not 'list'").
    "torchrl-0.14.1/sota-implementations/pilco/pilco.py": Recipe(
        needs="a script that runs as published: with no logger backend main() raises NameError (pilco.py:192, "
              "`logger` bound only under `if cfg.logger.backend`), with one evaluate_policy logs a list "
              "(pilco.py:32-40: TypeError in log_scalar's float())"),
    "torchrl-0.14.1/sota-implementations/dreamer/dreamer_isaac.py": Recipe(
        needs="the Isaac Lab simulator (isaaclab, NVIDIA Isaac Sim) that generates its data"),
    # What the others read, from their source: none of it can be made here.
    **{f"torchrl-0.14.1/sota-implementations/{name}.py": Recipe(needs=(
        "Atari frames (ale-py's ROMs would do) resized by torchrl's Resize transform, which needs torchvision "
        f"(torchrl/envs/transforms/_observation.py:195-199, {where}); torchvision does not import beside torch 2.13.0 "
        "(operator torchvision::nms does not exist)")) for name, where in (
        ("a2c/a2c_atari", "utils_atari.py's make_parallel_env"), ("dqn/dqn_atari", "utils_atari.py's make_env"),
        ("ppo/ppo_atari", "utils_atari.py's make_parallel_env"), ("impala/impala_single_node", "utils.py's make_env"))},
    **{f"torchrl-0.14.1/sota-implementations/impala/impala_multi_node_{name}.py": Recipe(needs=(
        f"a {what} cluster of collector nodes, and Atari frames resized with torchvision as impala_single_node"))
       for name, what in (("ray", "Ray"), ("submitit", "Slurm (submitit)"))},
    "torchrl-0.14.1/sota-implementations/dreamer/dreamer.py": Recipe(
        needs="DeepMind Control pixels (dm_control) resized by torchrl's Resize, which needs torchvision "
              "(dreamer_utils.py's transforms); torchvision does not import beside torch 2.13.0"),
    **{f"torchrl-0.14.1/sota-implementations/expert-iteration/expert-iteration-{name}.py": Recipe(
        needs="a Ray cluster with vLLM serving a pretrained language model from the Hugging Face hub (downloaded "
              "weights) and the GSM8K dataset (ei_utils.py)") for name in ("sync", "async")},
}
# td3 six steps: its update(batch, update_actor) first steps the actor's optimizer at step 2 (the
# Optimizer.step frame then compiled for it too) and first takes update_actor=True at step 3 (the bool's
# other graph): steps 3-5 show both compiled once.
_TD3 = "torchrl-0.14.1/sota-implementations/td3/td3.py"
RECIPES[_TD3] = dataclasses.replace(RECIPES[_TD3], min_steps=6)
# dqn_cartpole six steps: torchrl's collector first calls the policy it compiles itself once the random
# frames are in, at step 2 (two updates per batch, 64 random frames in batches of 32), and rebuilds it at
# its second call; steps 4-5 show it stable after that warm-up (analyze.py counts it from step 2).
_DQN = "torchrl-0.14.1/sota-implementations/dqn/dqn_cartpole.py"
RECIPES[_DQN] = dataclasses.replace(RECIPES[_DQN], min_steps=6)


def missing_hydra_config(f: corpus.CorpusFile) -> str | None:
    """The ``config_name`` YAML a ``@hydra.main`` script needs when it is not next to it, else None."""
    try:
        tree = ast.parse(f.source.read_bytes())
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("hydra.main", "main") and node.keywords:
            words = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            if "config_name" not in words:
                continue
            name = str(words["config_name"])
            folder = f.source.parent / str(words.get("config_path") or "")
            if not (folder / f"{name}.yaml").exists():
                return f"{name}.yaml"
    return None


def _main_block(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)
        and n.test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in n.test.comparators)
        for n in tree.body
    )


def candidates(files: list[corpus.CorpusFile]) -> list[corpus.CorpusFile]:
    """Corpus scripts with a training step loop and a __main__ block."""
    out = []
    for f in files:
        data = f.source.read_bytes()
        if corpus.facts(data, f.key).step_loop != "train":
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        if _main_block(tree):
            out.append(f)
    return out


@dataclass
class Outcome:
    key: str
    status: str  # verified / verified (eager) / failed / nothing to port / original fails / not runnable
    why: str = ""
    exit: int | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    original_crash: str = ""  # the original's own crash at its line ("": it did not crash)


def _path(root: Path, deps: Path | None) -> str:
    return os.pathsep.join([str(root), *([str(deps)] if deps else [])])


def installed(work: Path, name: str, folder: Path) -> Path:
    """FOLDER as pip would have installed it: reached through a folder named site-packages (a link),
    so the check reads the project's library (torchrl/, torchtune/) and the deps as libraries, not as
    the port's own code, as on a user's machine. Only the script's own folder is ported."""
    link = work / "installed" / name / "site-packages"
    if not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(folder.resolve(), target_is_directory=True)
    return link


def _env(root: Path, deps: Path | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PORTER_"))}
    env.update(PYTHONPATH=_path(root, deps), PYTHONDONTWRITEBYTECODE="1", **(extra or {}))
    return env


def _root_cause(report: dict[str, Any]) -> str:
    """The crash at its line, or the first failing finding at its line, or the parity pass without a verdict."""
    crash = report.get("crash")
    if crash:
        message = [line for line in str(crash.get("message", "")).strip().splitlines() if line.strip()]
        where, what = f"{crash.get('file')}:{crash.get('line')}", (message[-1] if message else crash.get("kind"))
        return f"crash at {where}: {what[:300]}"
    errors = [f for f in report.get("findings", []) if f["severity"] == "error"]
    if errors:
        first = errors[0]
        where = f"{first['file']}:{first['line']}" if first.get("file") else "(no line)"
        more = f" (+{len(errors) - 1} more: {', '.join(sorted({f['kind'] for f in errors[1:]}))})" if len(errors) > 1 else ""
        return f"{first['kind']} at {where}: {first['message'][:200]}{more}"
    return str(report.get("verdict"))


def crash_site(crash: dict[str, Any] | None, folder: Path) -> tuple[str, str, str] | None:
    """Where and what a report's crash is: (exception type, file relative to the script's folder or
    the library file, the source text at the line), None when there is no crash. A script that
    exits after printing a traceback (Hydra's run_and_report) names the printed exception's type."""
    if not crash:
        return None
    if crash.get("kind") != "exception":
        return (str(crash.get("kind")), "", "")
    message = str(crash.get("message", ""))
    printed = re.search(r"after printing ([\w.]+)", message)
    kind = printed.group(1) if printed else message.split(":", 1)[0]
    file, line = crash.get("file"), crash.get("line")
    if not file:
        return (kind, "", "")
    path = Path(file)
    rel = str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path)
    try:
        text = path.read_text(encoding="utf-8").splitlines()[int(line) - 1].strip() if line else ""
    except (OSError, IndexError, UnicodeDecodeError, ValueError):
        text = f"line {line}"
    return (kind, rel, text)


def same_crash(report: dict[str, Any], port_dir: Path, orig_dir: Path) -> bool:
    """The port crashed as the original did: the same exception type at the same place (the same
    file of the script's folder, or the same library file, and the same source text there: the
    port's line numbers move where porter inserted lines)."""
    port = crash_site(report.get("crash"), port_dir)
    return port is not None and port == crash_site(report.get("original_crash"), orig_dir)


def _crash_text(crash: dict[str, Any] | None) -> str:
    if not crash:
        return ""
    message = [line for line in str(crash.get("message", "")).strip().splitlines() if line.strip()]
    return f"{crash.get('file')}:{crash.get('line')}: {(message[-1] if message else crash.get('kind'))[:200]}"


def _first_error(report: dict[str, Any]) -> str:
    """The first failing finding's whole message (the root cause quotes 200 characters of it; a
    recompile's guard names the library line it came from further on)."""
    errors = [f for f in report.get("findings", []) if f["severity"] == "error"]
    return str(errors[0]["message"]) if errors and not report.get("crash") else ""


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    graphs = report.get("graphs", [])
    kinds = [f["kind"] for f in report.get("findings", [])]
    passes = (report.get("parity") or {}).get("passes", [])
    return {
        "graphs": len(graphs),
        "lowered": sum(1 for g in graphs if g.get("lowered")),
        # failing recompiles (errors; a mode switch's or a bool's other graph, compiled once, is info);
        # warm-up ones (stable after: a warning) apart, each finding's count summed
        "recompiles": sum(int(f.get("count") or 1) for f in report.get("findings", [])
                          if f["kind"] == "recompile" and f.get("severity") == "error"),
        "warmup_recompiles": sum(int(f.get("count") or 1) for f in report.get("findings", []) if f["kind"] == "warm-up-recompile"),
        "graph_breaks": kinds.count("graph-break"),
        "syncs_per_step": (report.get("syncs_per_step") or {}).get("per step (findings)"),
        "steps_run": report.get("steps_run"),
        "step_counter": report.get("step_counter"),
        "parity": [p["verdict"] for p in passes],
    }


NOTHING = "nothing to port"
EAGER = "verified (eager)"  # proven to run and train the same, eagerly: the script refuses compile (Recipe.eager)
# The original itself crashes, the same exception at the same place as the port: the script does not run
# here as published (a bug of its own), so no port of it can be verified. Counted apart, not in the
# verified fraction's denominator (the scripts whose original runs), and printed with the crash.
ORIGINAL_FAILS = "original fails"

# Where a failing finding or crash comes from a library the script calls, read in that library's
# source (the unpacked archive): (text of the finding or crash, whose it is, the reason at its line).
# "porter's": porter handed the library what it rejects (NRN116 library-devices ports these now; seen
# again, that rule missed a case). "the library's": the original would do the same on CUDA.
LIBRARY_LIMITS: tuple[tuple[str, str, str], ...] = (
    ("Non supported device", "porter's", "torchrl 0.14.1's Collector takes a sync function for cuda, mps, npu or cpu "
     "devices only (torchrl/collectors/_single.py:1023, _get_sync_fn): a collector device ported to neuron; NRN116 "
     "should have given the collector the CPU"),
    ("bf16 precision was requested but not available", "porter's", "torchtune 0.6.1's verify_bf16_support "
     "(torchtune/training/precision.py:63-72) knows CUDA, MPS, NPU and XPU only: NRN116 should have given get_dtype's "
     "check the CPU (get_dtype, precision.py:113)"),
    ("module 'torch.cpu' has no attribute 'memory_stats'", "porter's (a library callee NRN116 does not cover yet)",
     "torchtune 0.6.1's get_memory_stats (torchtune/training/memory.py:266) takes its device module from "
     "get_torch_device_namespace (torchtune/utils/_device.py:251-264: cuda, npu, xpu, mps, else torch.cpu): the recipe "
     "calls it for any device but the CPU (full_finetune_single_device.py:453-454), so the ported device: neuron "
     "reaches torch.cpu.memory_stats, on Trainium too"),
    ("torchtune/modules/loss/kd_losses.py:251", "the library's", "torchtune 0.6.1's ForwardKLWithChunkedOutputLoss "
     "tests `if sum_masks == 0` on a tensor at every call (torchtune/modules/loss/kd_losses.py:250-251): a host sync "
     "and a graph break in the compiled loss, on CUDA as on Neuron"),
    ("torchrl/objectives/utils.py:620", "the library's", "torchrl 0.14.1's HardUpdate keeps its step counter in a "
     "Python int (torchrl/objectives/utils.py:620, `if self.counter == self.value_network_update_interval`, counted up "
     "at each step()): the script's compiled update, which calls the updater, is guarded on the counter's value and "
     "recompiles as it changes, on CUDA as on Neuron"),
    ("torchrl/objectives/value/advantages.py:656", "the library's", "torchrl 0.14.1's value estimators test "
     "`if not nan_mask.any()` on the host at each call (torchrl/objectives/value/advantages.py:655-656, "
     "_sanitize_next_obs_nan, run on every batch at :872): a host sync and a graph break in the script's compiled "
     "advantage module, on CUDA as on Neuron"),
    ("._in_keys is None", "the library's", "torchrl 0.14.1's losses set their in_keys at their first call "
     "(torchrl/objectives/sac.py:1341, `if self._in_keys is None`): the script's compiled update, which calls the "
     "loss, is guarded on it and recompiles at its second call, on CUDA as on Neuron"),
)
# The on-policy MuJoCo scripts (a2c_mujoco, ppo_mujoco, gail, rnd_mujoco), traced 2026-12-07: their utils
# build the policy's TanhNormal bounds on the device, and torchrl's CPU copy of the policy for the collector
# NRN116 puts on the CPU maps only parameters and buffers, so every env step read them back (about 128 syncs
# per step). NRN116 now builds them on the host (`.to(device)` -> `.cpu()`): 0.5 to 1 sync per step is left,
# GAE's `if not nan_mask.any()` (LIBRARY_LIMITS), plus recompiles of tensordict's dispatch wrapper, whose
# cache entries the collector's compiled CPU policy shares, at the value estimator's first compiled call.
# Per script (corpus key): (text of the root cause, whose, the reason at its line) for a cause that is
# the script's configuration rather than the emulation's.
SCRIPT_LIMITS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "torchtune-0.6.1/recipes/ppo_full_finetune_single_device.py": ((
        "torchtune/generation/_generation.py", "the script's own (its design) and the library's",
        "the recipe generates each response token by token through its compiled policy and value models (torchtune's "
        "generate, torchtune/generation/_generation.py), a new sequence length at each call, and raises Dynamo's cache "
        "limit to 16 for it (ppo_full_finetune_single_device.py:31-33, \"enabling compile results in slightly more "
        "recompiles than the default cache limit\"): one graph per length, on CUDA as on Neuron (where each is a "
        "neuronx-cc compile), and once a size has changed Dynamo makes the lengths symbolic, which TorchNeuron rejects "
        "(torchtune/modules/transformer.py:82); generate also tests its prompt padding on the host at each call "
        "(`if not padding_masks.all()`, _generation.py:268), on CUDA too"),),
    "torchrl-0.14.1/sota-implementations/multiagent/mappo_ippo.py": ((
        "porter left it uncompiled", "porter's (no compile it can insert here yet)",
        "porter no longer compiles the ClipPPOLoss (NRN413 at the marker): compiled, it recompiled at steps 1 and 2 "
        "on tensordict's guard on the swapped-in parameters (tensordict/nn/probabilistic.py:1910, the 2026-12-02 01:10 "
        "run). Eager, the loss's TanhNormal checks high > low on the host at each call "
        "(torchrl/modules/distributions/continuous.py:427, skipped only when compiling): the host syncs. A compiled "
        "update (loss, backward, clip, optimizer step in one torch.compile'd function, NRN415's form; measured by hand "
        "2026-12-02 16:41): 0 syncs/step, 23/23 graphs lowered, match/match, but get_dist still recompiles at steps 1 "
        "and 2 (tensordict/nn/probabilistic.py:1910, \"_param_td got deallocated\": the MultiAgentMLP's own "
        "to_module swap inside the loss's), so NRN415 leaves ClipPPOLoss out"),),
    "torchrl-0.14.1/sota-implementations/gail/gail.py": ((
        "parity", "not traced (parity) and the library's (syncs)",
        "the losses match the original's at steps 0 and 1 and differ at step 2 by 0.095% relative (17.4218 against "
        "17.4053, 2026-12-07; the original with one ulp added to every parameter moves 0.05%): not traced. The syncs "
        "left are the library's: GAE's `if not nan_mask.any()` (torchrl/objectives/value/advantages.py:656, gail.py:196) "
        "and the eager PPO loss's TanhNormal testing its bounds on the host at each call (`if is_compiling() or "
        "(self.non_trivial_max or self.non_trivial_min)`, torchrl/modules/distributions/continuous.py:471, skipped only "
        "when compiling; gail.py:217), on CUDA as on Neuron. Before 2026-12-07 the policy's TanhNormal bounds built on the "
        "device (gail/ppo_utils.py:55-56) were read back at every env step by the collector's CPU copy of the policy "
        "(133.5 syncs per step); NRN116 now builds them on the host"),),
    "torchrl-0.14.1/sota-implementations/rnd/rnd_mujoco.py": ((
        "recompile", "the script's design, the library's and the check's",
        "the update is compiled after one eager call (compile_with_warmup(update, warmup=1), rnd_mujoco.py:248), so its "
        "first compiled call, at step 2, compiles the optimizer's step frames once per Adam (the PPO pair's and the "
        "predictor's): with --steps 5 the check counts them as warm-up (3 warm-up recompiles, 2026-12-07). What is left "
        "then: GAE's `if not nan_mask.any()` (torchrl/objectives/value/advantages.py:656, rnd_mujoco.py:318) and a "
        "recompile of tensordict's dispatch wrapper, the library's, on CUDA as on Neuron; and parity: compiled, the "
        "losses leave the eager original's at step 2, the first step of the second batch (0.253 relative by step 4). "
        "The RND loss draws its update_fraction=0.25 mask with torch.rand inside the compiled update "
        "(torchrl/objectives/rnd.py:134), and those draws do not follow the eager original's (not traced further): "
        "with update_fraction=1.0 (no mask) both parity passes match at 5 steps, and with compile.compile=False the "
        "port matches the original bit for bit over 5 steps with the mask (2026-12-07, so the env's network copies "
        "give the original's intrinsic rewards). Before 2026-12-07 the port crashed here: the "
        "collector moved the RND networks the loss trains to the CPU with its env; NRN116 now gives the env its own "
        "copies, refreshed before each batch"),),
    "torchrl-0.14.1/sota-implementations/multiagent/sac.py": ((
        "porter left it uncompiled", "porter's (no compile it can insert here yet)",
        "porter leaves the SACLoss eager (NRN413), where the actor's TanhNormal checks its bounds on the host at each "
        "call (torchrl/modules/distributions/continuous.py:427 and :471, skipped only when compiling): the 6 syncs per "
        "step. A compiled update (loss, backward, clip, optimizer step in one torch.compile'd function, NRN415's form; "
        "measured by hand 2026-12-07 07:57): 0 syncs/step, 34 graphs, match/match, but get_dist recompiles at steps 1 and "
        "2 (tensordict/nn/probabilistic.py:1910, \"_param_td got deallocated\": the MultiAgentMLP's own to_module swap "
        "inside the loss's, as mappo_ippo's), so NRN415 leaves it out"),),
    "torchrl-0.14.1/sota-implementations/sac/sac-async.py": ((
        "run-to-run nondeterminism", "the script's own (its design)",
        "its collector runs in another process and extends the shared replay buffer while the script trains "
        "(sac-async.py:130-137, AsyncCollector with replay_buffer=; total_frames is not a stop with a buffer: 6 runs of "
        "2026-12-07 with total_frames=96 saw 320 to 480 frames written by step 1), so each sample depends on timing and "
        "the original differs from itself at step 1: no parity verdict can hold, on CUDA as on Neuron. The port runs "
        "(before 2026-12-07 it crashed: a neuron storage cannot be shared, torchrl/data/replay_buffers/storages/"
        "tensor.py:510-518; NRN116 now puts the shared storage on the CPU and moves each sample), compiles and "
        "lowers its update, and has no per-step sync left"),),
    "torchrl-0.14.1/sota-implementations/multiagent/maddpg_iddpg.py": ((
        "continuous.py", "porter's (no compile it can insert here yet)",
        "porter leaves the DDPGLoss eager (NRN413): its TanhDelta actor raises under compile with its default "
        "safe=True whatever the torch version (torchrl/modules/distributions/continuous.py:810-811, "
        "_err_compile_safetanh; NRN415's compiled update crashed there, 2026-12-02 17:10), and eager it checks high > low "
        "on the host each call (continuous.py:798)"),),
}
# A script whose device comes from this call trains on the CPU on a Trainium host.
_CHOOSER = "get_available_device("
_CHOOSER_WHY = ("takes its device from torchrl._utils.get_available_device() (torchrl/_utils.py:1197: CUDA, NPU, MPS, "
                "else the CPU): on a Trainium host the CPU; NRN116 should have picked the accelerator")


def library_limit(text: str, port: Path, key: str = "") -> tuple[str, str] | None:
    """(whose, why) for a root cause that is a library's limit, a port of a library call or the
    script's configuration (SCRIPT_LIMITS), else None."""
    own = next(((whose, why) for needle, whose, why in SCRIPT_LIMITS.get(key, ()) if needle in text), None)
    if own:
        return own
    if "no tensor reached the neuron device" in text:
        lines = [n for n, line in enumerate(port.read_text(encoding="utf-8").splitlines(), 1) if _CHOOSER in line]
        return ("porter's", f"{port.name}:{lines[0]} {_CHOOSER_WHY}") if lines else None
    return next(((whose, why) for needle, whose, why in LIBRARY_LIMITS if needle in text), None)


def help_with_files(f: corpus.CorpusFile, recipe: Recipe, deps: Path | None) -> tuple[bool, str]:
    """corpus.run_help for a script that needs the recipe's files to say its usage (Hydra composes
    the config before it prints ``--help``): the files in a temp folder, the recipe's arguments."""
    with tempfile.TemporaryDirectory(prefix="porter-check-help-") as tmp:
        data = Path(tmp)
        write_files(recipe, data)
        args = [a.replace("{data}", str(data)) for a in recipe.args]
        env = {**_env(f.root, deps), "CUDA_VISIBLE_DEVICES": ""}
        try:
            done = subprocess.run([sys.executable, str(f.source), *args, "--help"], cwd=tmp, env=env, capture_output=True,
                                  text=True, timeout=HELP_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False, f"timeout {HELP_TIMEOUT:.0f}s"
    text = done.stdout + done.stderr
    if done.returncode == 0:
        return True, ""
    missing = re.findall(r"ModuleNotFoundError: No module named '([^']+)'", text)
    last = [line for line in text.strip().splitlines() if line.strip()]
    return False, f"missing module {missing[-1]}" if missing else (last[-1][:160] if last else f"exit {done.returncode}")


def _changed(orig_dir: Path, port_dir: Path) -> list[str]:
    """The files of the script's folder the port changed (bytes differ, or only on one side)."""
    names = {p.relative_to(orig_dir) for p in orig_dir.rglob("*") if p.is_file()}
    names |= {p.relative_to(port_dir) for p in port_dir.rglob("*") if p.is_file()}
    return sorted(str(n) for n in names if not (orig_dir / n).is_file() or not (port_dir / n).is_file()
                  or (orig_dir / n).read_bytes() != (port_dir / n).read_bytes())


def check_one(f: corpus.CorpusFile, recipe: Recipe, steps: int, timeout: float, work: Path,
              deps: Path | None) -> Outcome:
    folder = f.source.parent
    rel = folder.relative_to(f.root)
    base = work / "scripts" / f.key.replace("/", "__")  # two scripts of one folder each get their copy
    orig_dir, port_dir = base / "orig" / f.project / rel, base / "port" / f.project / rel
    shutil.copytree(folder, orig_dir, ignore=shutil.ignore_patterns("__pycache__"))
    for source, target in recipe.beside:
        (orig_dir / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f.root / source, orig_dir / target)
    migrate = subprocess.run(
        [sys.executable, "-m", "porter", "migrate", str(orig_dir), "--out", str(port_dir), "--no-cache", "--no-diff",
         "--no-progress", "-q"], cwd=ROOT, capture_output=True, text=True,
    )
    port, orig = port_dir / f.source.name, orig_dir / f.source.name
    if not port.exists():
        return Outcome(f.key, "failed", f"porter's: migrate wrote no port (exit {migrate.returncode}): {migrate.stderr[-300:]}")
    changed = _changed(orig_dir, port_dir)
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    write_files(recipe, data)
    variables = {name: value.replace("{data}", str(data)) for name, value in recipe.env}
    if recipe.make:
        made = subprocess.run([sys.executable, "-c", recipe.make, str(data)], env=_env(f.root, deps, variables), capture_output=True,
                              text=True, timeout=600)
        if made.returncode != 0:
            return Outcome(f.key, "failed", f"the recipe's data maker failed (exit {made.returncode}): {made.stderr[-300:]}")
    args = [a.replace("{data}", str(data)) for a in recipe.args]
    report_path = work / "reports" / (f.key.replace("/", "__") + ".json")
    report_path.parent.mkdir(parents=True, exist_ok=True)
    eager = ""
    if recipe.eager:  # the script's own refusal of compile, at its line, or no eager check
        needle, because = recipe.eager
        lines = [n for n, line in enumerate(orig.read_text(encoding="utf-8").splitlines(), 1) if needle in line]
        if not lines:
            return Outcome(f.key, "failed", f"the recipe's eager reason is not in the script (no line says {needle!r})")
        eager = f"eager: {because} ({orig.name}:{lines[0]})"
    command = [sys.executable, "-m", "porter", "check", str(port), "--against", str(orig), "--steps", str(max(steps, recipe.min_steps)),
               "--nproc", str(recipe.nproc), "--timeout", str(timeout), "--json", str(report_path),
               *(["--allow-eager"] if eager else []), *(["--one-at-a-time"] if recipe.one_at_a_time else []), "--", *args]
    libraries = installed(work, f.project, f.root), (installed(work, "deps", deps) if deps else None)
    done = subprocess.run(command, cwd=ROOT, env=_env(*libraries, variables), capture_output=True, text=True, timeout=timeout * 4)
    if not report_path.exists():
        return Outcome(f.key, "failed", f"porter's: check wrote no report (exit {done.returncode}): {done.stderr[-300:]}",
                       done.returncode)
    report = json.loads(report_path.read_text())
    facts = _summary(report)
    if not changed:
        # Not verified (no port was proven: nothing of porter's ran) and not failed (unchanged, it runs
        # on a Trainium host as it runs here, where its own code puts it).
        return Outcome(f.key, NOTHING, "porter changes no file of its folder: it names no CUDA device or API "
                       f"of its own (check: exit {done.returncode}, parity {facts['parity'] or 'none'}; "
                       f"{_root_cause(report) if done.returncode else 'no finding'})", done.returncode, facts)
    if done.returncode == 0 and facts["parity"] == ["match", "match"]:
        if eager and facts["graphs"] == 0:
            return Outcome(f.key, EAGER, eager, 0, facts)
        sensitive = any(p.get("tolerance_name") == "ORIGINAL_1ULP_SENSITIVITY"
                        for p in (report.get("parity") or {}).get("passes", []))
        return Outcome(f.key, "verified", "the fp32 pass matched within the original's own 1-ulp sensitivity (porter "
                       "check's note)" if sensitive else "", 0, facts)
    cause = _root_cause(report)
    parity_notes = [p.get("note", "") for p in (report.get("parity") or {}).get("passes", []) if p.get("verdict") != "match"]
    # the root cause is the script's own when the original crashes the same way (same exception at
    # the same place), or it is a parity mismatch the original shows against itself
    original_crash = _crash_text(report.get("original_crash"))
    crashed_alike = same_crash(report, port_dir, orig_dir)
    own = crashed_alike or "the original against itself" in cause
    limit = library_limit(f"{cause} {_first_error(report)}", port, f.key)
    if crashed_alike:
        return Outcome(f.key, ORIGINAL_FAILS, f"the script's own: its original crashes the same way: {cause}",
                       done.returncode, facts, original_crash)
    who = ("the script's own (its original crashes the same way)" if crashed_alike
           else "the script's own (its original differs from itself)" if own else limit[0] if limit else "porter's")
    elsewhere = (f" (the original crashed too, differently: {original_crash})"
                 if original_crash and report.get("crash") and not own else "")
    return Outcome(f.key, "failed", f"{who}{elsewhere}: {cause}"
                   + (f" [{'; '.join(parity_notes)[:200]}]" if parity_notes else "")
                   + (f"\n    why: {limit[1]}" if limit else ""), done.returncode, facts, original_crash)


def run(steps: int, timeout: float, only: str | None, work: Path, deps: Path | None, log: Any = print) -> list[Outcome]:
    files = candidates(corpus.build(log=log))
    if only:
        files = [f for f in files if any(part in f.key for part in only.split(","))]
    corpus.HELP_TIMEOUT = HELP_TIMEOUT
    outcomes: list[Outcome] = []
    for f in files:
        recipe = RECIPES.get(f.key)
        config = missing_hydra_config(f)
        if config and not (recipe and any(name == config for name, _ in recipe.files)):
            outcome = Outcome(f.key, "not runnable", f"its Hydra config {config} is not in the published archive"
                              + (f"; it also needs {recipe.needs}" if recipe and recipe.needs else ""))
            log(_line(outcome))
            outcomes.append(outcome)
            continue
        ok, why = (help_with_files(f, recipe, deps) if recipe and recipe.files
                   else corpus.run_help(f.source, Path(_path(f.root, deps)), timeout=HELP_TIMEOUT))
        if not ok:
            outcome = Outcome(f.key, "not runnable", f"original --help fails here: {why}"
                              + (f"; it also needs {recipe.needs}" if recipe and recipe.needs else ""))
        elif recipe is None:
            outcome = Outcome(f.key, "not runnable", "no recipe: what it reads is not written down here yet")
        elif recipe.needs:
            outcome = Outcome(f.key, "not runnable", f"needs {recipe.needs}")
        else:
            outcome = check_one(f, recipe, steps, timeout, work, deps)
        log(_line(outcome))
        outcomes.append(outcome)
    return outcomes


def _line(o: Outcome) -> str:
    text = f"{o.status:<15} {o.key}"
    if o.facts:
        s = o.facts
        warm = f", warm-up recompiles {s['warmup_recompiles']} (warnings)" if s.get("warmup_recompiles") else ""
        text += (f"\n    exit {o.exit}; graphs {s['graphs']} (lowered {s['lowered']}), failing recompiles {s['recompiles']}{warm}"
                 f", breaks {s['graph_breaks']}; syncs/step {s['syncs_per_step']}; steps {s['steps_run']} "
                 f"({s['step_counter']}); parity {s['parity'] or 'none'}")
    if o.why:
        text += f"\n    {o.why}"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="3: step 2 shows a step-1 recompile stable (warm-up)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run of a script")
    parser.add_argument("--only", help="only the candidates whose key contains this (several, comma-separated: any of them)")
    parser.add_argument("--json", type=Path, help="write the outcomes as JSON")
    parser.add_argument("--keep", type=Path, help="keep the ported trees, data and reports in DIR")
    parser.add_argument("--deps", type=Path, help="folder of the projects' own dependencies (PYTHONPATH after the project's root)")
    args = parser.parse_args(argv)
    try:
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            args.keep.mkdir(parents=True)
            outcomes = run(args.steps, args.timeout, args.only, args.keep, args.deps)
        else:
            with tempfile.TemporaryDirectory(prefix="porter-check-corpus-") as work:
                outcomes = run(args.steps, args.timeout, args.only, Path(work), args.deps)
    except corpus.CorpusError as error:
        print(f"check-corpus: {error}", file=sys.stderr)
        return 2
    ran = [o for o in outcomes if o.status != "not runnable"]
    runnable = [o for o in ran if o.status not in (NOTHING, ORIGINAL_FAILS)]
    verified = [o for o in runnable if o.status == "verified"]
    eagerly = [o for o in runnable if o.status == EAGER]
    nothing = sum(o.status == NOTHING for o in ran)
    own = sum(o.status == ORIGINAL_FAILS for o in ran)
    print(f"candidates (training loop + __main__): {len(outcomes)}; not runnable here: {len(outcomes) - len(ran)}; "
          f"run: {len(ran)}, of which not counted: nothing to port (porter changes nothing) {nothing}, the original "
          f"itself crashes (the same way as the port) {own}; runnable with a port: {len(runnable)}")
    print(f"verified fraction: {corpus.pct(len(verified), len(runnable))} of the runnable scripts (compiled, lowered, "
          f"losses matched); verified eagerly (the script refuses compile, at its line; not in that fraction): "
          f"{len(eagerly)}; verified either way: {corpus.pct(len(verified) + len(eagerly), len(runnable))}")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
