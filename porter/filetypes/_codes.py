"""The codes of the non-Python ports, each with its documentation (for ``porter explain``).

Facts they rest on, with their public sources: package families and torch autoload (AWS Neuron
docs, TorchNeuron overview and release notes), 64 logical NeuronCores per trn2.48xlarge and one
core per rank (AWS Neuron docs, training best practices; torch-neuronx distributed/backend.py),
bf16 (torch-neuronx csrc/amp/autocast_mode.cpp), the ``neuron`` process group, torchrun and EFA
(AWS Neuron docs, TorchNeuron distributed guide), ``NEURON_LAUNCH_BLOCKING`` (torch-neuronx
docs/environment_variables.md), the legacy XLA stack (AWS Neuron docs, PyTorch/XLA programming
guide). A statement no source confirms says "unverified".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeDoc:
    summary: str
    what: str
    why: str
    before: str
    after: str
    safety: str

    def render(self, code: str) -> str:
        parts = [f"{code} — {self.summary}", ""]
        for title, body in (
            ("What it does", self.what),
            ("Why", self.why),
            ("Before", self.before),
            ("After", self.after),
            ("Safety", self.safety),
        ):
            parts.append(f"{title}:")
            parts.extend(f"    {line}" if line else "" for line in body.strip("\n").splitlines())
            parts.append("")
        return "\n".join(parts).rstrip() + "\n"


DOCS: dict[str, CodeDoc] = {
    "NRN190": CodeDoc(
        "container built FROM a CUDA image: review marker pointing to the Neuron deep learning containers",
        "Marks a Dockerfile `FROM` (or an `ARG` holding the image) whose image is a CUDA one: `nvidia/cuda`,\n"
        "`nvcr.io/nvidia/...`, a tag naming cuda/cudnn/gpu (e.g. `pytorch/pytorch:*-cuda12.1-*`).",
        "CUDA images carry the CUDA runtime, not the Neuron driver/runtime and torch-neuronx. The Neuron\n"
        "deep learning containers (public.ecr.aws/neuron, e.g. pytorch-training-neuronx) do; their exact\n"
        "names and tags are not in the facts file (unverified): pick one with torch-neuronx 2.13.x/2.14.x.",
        "FROM nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04",
        "# porter: NRN190 CUDA base image: build FROM a Neuron Deep Learning Container (...)\n"
        "FROM nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04",
        "Marker only: a base image decides the whole container (OS, Python, drivers); a human picks it.",
    ),
    "NRN191": CodeDoc(
        "CUDA_VISIBLE_DEVICES: dropped under multi-process launchers, else -> NEURON_RT_VISIBLE_CORES (review)",
        "In a script that starts torchrun / torch.distributed.launch / accelerate launch / deepspeed / mpirun,\n"
        "drops `CUDA_VISIBLE_DEVICES` (the prefix of the launch command removed, an `export` line commented\n"
        "out, with a note). Elsewhere (one process) renames it to `NEURON_RT_VISIBLE_CORES`, also Dockerfile\n"
        "`ENV` and config keys. Marks an Accelerate `gpu_ids` other than `all` (Accelerate turns it into\n"
        "CUDA_VISIBLE_DEVICES).",
        "The Neuron runtime picks NeuronCores with NEURON_RT_VISIBLE_CORES and ignores CUDA_VISIBLE_DEVICES\n"
        "(torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py; AWS Neuron docs, PyTorch/XLA programming guide (archive)). Under torchrun each rank sets it to its local rank only when it is unset, then\n"
        "asserts one core per process: a multi-core value set for the job makes every rank fail (torch-neuronx source, torch_neuronx/neuron.py).",
        "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 train.py\nCUDA_VISIBLE_DEVICES=1 python eval.py",
        "# porter: NRN191 CUDA_VISIBLE_DEVICES=0,1,2,3 dropped: torchrun gives each rank its own NeuronCore\n"
        "torchrun --nproc_per_node=4 train.py\nNEURON_RT_VISIBLE_CORES=1 python eval.py",
        "Review: a renamed value now indexes logical NeuronCores, not GPUs. A script that exports the variable\n"
        "and launches a single process through a launcher loses the restriction (rare). `gpu_ids: all` is\n"
        "left alone (it sets nothing).",
    ),
    "NRN192": CodeDoc(
        "CUDA_LAUNCH_BLOCKING -> NEURON_LAUNCH_BLOCKING",
        "Renames the variable in scripts, Dockerfiles and config keys.",
        "`NEURON_LAUNCH_BLOCKING=1` forces synchronous execution on Neuron (AWS Neuron docs, about PyTorch on Neuron (torch/about-pytorch-neuron)), the debugging aid\n"
        "CUDA_LAUNCH_BLOCKING=1 is on CUDA.",
        "CUDA_LAUNCH_BLOCKING=1 python train.py",
        "NEURON_LAUNCH_BLOCKING=1 python train.py",
        "Safe: a debugging switch with the same meaning.",
    ),
    "NRN193": CodeDoc(
        "CUDA-only environment setting or toolkit path: review marker",
        "Marks commands that set `PYTORCH_CUDA_ALLOC_CONF`, `CUDA_DEVICE_ORDER`, `CUBLAS_WORKSPACE_CONFIG`,\n"
        "`TORCH_CUDA_ARCH_LIST`, `CUDA_HOME`, `NVIDIA_VISIBLE_DEVICES`, ... or name `/usr/local/cuda`.\n"
        "Adjacent commands share one marker.",
        "They configure the CUDA runtime, allocator or toolkit; none has an effect on Trainium.",
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "# porter: NRN193 PYTORCH_CUDA_ALLOC_CONF: CUDA-only setting, no effect on Trainium\n"
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "Marker only: harmless to keep, so removal is left to a human.",
    ),
    "NRN194": CodeDoc(
        "config key naming a device: cuda / cuda:N -> neuron / neuron:N",
        "In YAML, JSON and TOML configs, a key `device`, `device_type` or `*_device` whose value is\n"
        "`cuda` or `cuda:N` gets `neuron` / `neuron:N` (quoting kept).",
        "The value reaches `torch.device(...)`/`.to(...)` in the script; the Neuron device type is `neuron`\n"
        "and `neuron:N` is valid (torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py).",
        "trainer:\n  device: cuda:0   # main device",
        "trainer:\n  device: neuron:0   # main device",
        "Safe for values a script hands to torch. Keys named otherwise are not touched.",
    ),
    "NRN195": CodeDoc(
        "config setting that selects CUDA (accelerator: gpu, Accelerate dynamo_backend): review marker",
        "Marks `accelerator: gpu|cuda` (Lightning-style) and an Accelerate `dynamo_backend` other than NO.",
        "These pick CUDA machinery by name. Whether a framework has a Neuron accelerator / dynamo choice is\n"
        "not in the facts (unverified); TorchNeuron compiles with torch.compile(backend=\"neuron\") (AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile)).",
        "accelerator: gpu",
        "# porter: NRN195 accelerator: gpu selects CUDA GPUs; use the Neuron device your framework supports\n"
        "accelerator: gpu",
        "Marker only.",
    ),
    "NRN196": CodeDoc(
        "nvidia-smi in a script: review marker",
        "Marks commands that run `nvidia-smi`.",
        "It does not exist on Trainium hosts; `neuron-ls` lists devices and `neuron-top` shows use\n"
        "(AWS Neuron docs, TorchNeuron troubleshooting (torch/troubleshooting)).",
        "nvidia-smi --query-gpu=name --format=csv",
        "# porter: NRN196 nvidia-smi does not exist on Trainium: use neuron-ls / neuron-top\n"
        "nvidia-smi --query-gpu=name --format=csv",
        "Marker only.",
    ),
    "NRN290": CodeDoc(
        "config mixed_precision: fp16 -> bf16 (Accelerate and others)",
        "A `mixed_precision` key with value `fp16` gets `bf16` (quoting kept).",
        "On Trainium mixed precision is bf16 autocast and needs no GradScaler (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs); Accelerate then\n"
        "drops its loss scaler.",
        "mixed_precision: fp16",
        "mixed_precision: bf16",
        "Review: bf16 has fewer mantissa bits than fp16 (more range), so losses differ slightly.",
    ),
    "NRN291": CodeDoc(
        "fp16 enabled -> bf16 (DeepSpeed block, TrainingArguments-style flag)",
        "DeepSpeed: an `fp16` block with `enabled: true` becomes `bf16` when it holds only `enabled`; with\n"
        "loss-scale keys it is kept, disabled, and a `\"bf16\": {\"enabled\": true}` block is added before it;\n"
        "an existing disabled bf16 block is enabled instead. `\"auto\"` is left (TrainingArguments decide).\n"
        "Flags: `fp16: true` -> `bf16: true` (or the pair flipped when `bf16: false` exists).",
        "bf16 is the mixed precision for Trainium (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs). DeepSpeed validates its bf16 block strictly,\n"
        "so fp16 loss-scale keys are never moved into it.",
        '"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16}',
        '"bf16": {"enabled": true},\n"fp16": {"enabled": false, "loss_scale": 0, "initial_scale_power": 16}',
        "Review: numerics change (bf16 vs fp16). Whether DeepSpeed itself runs on Neuron is a separate\n"
        "question (its CUDA ops: NRN994).",
    ),
    "NRN292": CodeDoc(
        "config precision / dtype: 16-mixed, fp16, float16 -> bf16 forms",
        "`precision` (and `*_precision`) values `16`, `16-mixed`, `16-true`, `fp16`, `float16`, `half` become\n"
        "`bf16-mixed`, `bf16-true`, `bf16`, `bfloat16`; dtype keys (`dtype`, `torch_dtype`, `amp_dtype`,\n"
        "`param_dtype`, ...) with `float16`/`fp16`/`half` become `bfloat16`/`bf16`. In a DeepSpeed config with an\n"
        "fp16/bf16 section, `communication_data_type` and `data_types.grad_accum_dtype` follow that section: bf16 when\n"
        "it ends up bf16, kept with a marker while it stays fp16 or \"auto\" (one precision per config).",
        "TorchNeuron autocast defaults to float16 unless bf16 is asked for, and bf16 needs no loss scaling\n"
        "(torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs). `16` is Lightning's spelling of 16-mixed, so it becomes \"bf16-mixed\".",
        "precision: 16-mixed",
        "precision: bf16-mixed",
        "Review: numerics change; a framework that reads `precision` differently must be checked, and so\n"
        "must code that compares the value with the old literal (`cfg.precision == \"16-mixed\"` now turns\n"
        "mixed precision off: porter sees one file at a time).",
    ),
    "NRN293": CodeDoc(
        "DeepSpeed amp (apex) block: review finding",
        "Reports an enabled DeepSpeed `amp` block (JSON: reported, not written).",
        "DeepSpeed's `amp` is NVIDIA apex, which is CUDA-only (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs: bf16 autocast instead).",
        '"amp": {"enabled": true, "opt_level": "O1"}',
        '"amp": {"enabled": true, "opt_level": "O1"}   (finding only; use "bf16": {"enabled": true})',
        "Finding only.",
    ),
    "NRN390": CodeDoc(
        "python -m torch.distributed.launch -> torchrun (and --use_env dropped)",
        "Replaces `python -m torch.distributed.launch` (review) and `python -m torch.distributed.run`\n"
        "(safe) with `torchrun` in scripts, Makefiles, Slurm files and Procfiles; drops `--use_env`.",
        "TorchNeuron jobs are launched with torchrun, which sets RANK, WORLD_SIZE and LOCAL_RANK (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed));\n"
        "torch.distributed.launch is deprecated and torchrun does not accept --use_env.",
        "python -m torch.distributed.launch --nproc_per_node=8 --use_env train.py",
        "torchrun --nproc_per_node=8 train.py",
        "Review for `launch`: it passed `--local_rank` to the script; torchrun passes LOCAL_RANK in the\n"
        "environment only, so a script that requires the argument must read os.environ[\"LOCAL_RANK\"].\n"
        "Interpreter flags before -m (e.g. -u) are dropped and said so.",
    ),
    "NRN391": CodeDoc(
        "process count per node (--nproc_per_node, --num_processes, --num_gpus, num_processes): review marker",
        "Marks a launcher's per-node process count in scripts and Accelerate configs.",
        "GPU jobs run one process per GPU; Trainium runs one per logical NeuronCore: trn2.48xlarge has 16\n"
        "chips x 4 = 64 logical cores (LNC2), ~24 GiB HBM each (torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py). The right number depends on\n"
        "the instance and on memory per rank.",
        "torchrun --nproc_per_node=8 train.py",
        "# porter: NRN391 --nproc_per_node=8 counts GPUs: one process per NeuronCore on Trainium (...)\n"
        "torchrun --nproc_per_node=8 train.py",
        "Marker only: batch sizes and learning rates usually change with the process count.",
    ),
    "NRN392": CodeDoc(
        "NCCL_* settings: review marker",
        "Marks commands (adjacent ones share a marker) and config keys that set `NCCL_*` variables.",
        "The `neuron` process group does not use NCCL; multi-node jobs use EFA (`FI_PROVIDER=efa` ...),\n"
        "and the collective knobs are NEURON_* settings (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed)).",
        "export NCCL_DEBUG=INFO\nexport NCCL_IB_DISABLE=1",
        "# porter: NRN392 NCCL_DEBUG, NCCL_IB_DISABLE: not read on Trainium: ...\n"
        "export NCCL_DEBUG=INFO\nexport NCCL_IB_DISABLE=1",
        "Marker only: harmless to keep.",
    ),
    "NRN393": CodeDoc(
        "config process-group backend nccl -> neuron (ddp_backend marked)",
        "`dist_backend`, `backend`, `*_backend` keys with value `nccl` get `neuron`. A TrainingArguments\n"
        "`ddp_backend: nccl` is marked instead.",
        "The TorchNeuron process group is registered as `neuron` (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed)); the value reaches\n"
        "init_process_group. transformers validates ddp_backend against its own list, which may not hold\n"
        "`neuron` in every release (unverified).",
        "dist_backend: nccl",
        "dist_backend: neuron",
        "Safe for values handed to init_process_group; marker for ddp_backend.",
    ),
    "NRN394": CodeDoc(
        "Accelerate distributed_type MULTI_GPU: review marker",
        "Marks `distributed_type: MULTI_GPU` in an Accelerate config.",
        "Accelerate has no Neuron-specific DistributedType in the facts; the TRL Neuron script mapped Neuron\n"
        "to MULTI_GPU and forced the neuron backend because older releases initialise nccl (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)).",
        "distributed_type: MULTI_GPU",
        "# porter: NRN394 MULTI_GPU: check your accelerate release supports Neuron (...)\n"
        "distributed_type: MULTI_GPU",
        "Marker only.",
    ),
    "NRN395": CodeDoc(
        "Slurm GPU request (#SBATCH --gres=gpu:N, --gpus...): review marker",
        "Marks `#SBATCH` directives that request GPUs.",
        "Trainium nodes expose Neuron devices, not GPUs; how a cluster schedules them (partition, gres name,\n"
        "--exclusive) is site-specific (unverified).",
        "#SBATCH --gres=gpu:8",
        "# porter: NRN395 --gres=gpu:8 asks Slurm for GPUs: request Trainium nodes (Neuron devices) instead\n"
        "#SBATCH --gres=gpu:8",
        "Marker only.",
    ),
    "NRN990": CodeDoc(
        "CUDA build pin (+cu121) -> plain pin",
        "Drops a CUDA local version (`+cu121`, `+cu118`) from requirement pins in requirements files,\n"
        "pyproject.toml, setup.cfg, setup.py, conda pip sections and pip install commands; marks a CUDA\n"
        "wheel given by URL. In a hash-locked file (`--hash=`) no version is edited (the hashes would break):\n"
        "markers ask to regenerate the lock file (NRN990/NRN992).",
        "`+cu121` selects the CUDA build from the PyTorch CUDA index; TorchNeuron runs on the plain torch\n"
        "release of its family (AWS Neuron docs, TorchNeuron overview (torch/index); AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)).",
        "torch==2.14.0+cu121",
        "torch==2.14.0",
        "Safe: the same release without the CUDA build.",
    ),
    "NRN991": CodeDoc(
        "torch pin with no TorchNeuron release -> torch 2.14.0 (review)",
        "An exact torch pin outside the TorchNeuron families (2.13.0, 2.14.0) is re-pinned to 2.14.0\n"
        "(Options.extra torch_family=2.13 chooses 2.13.0); a range that admits neither gets a marker, as\n"
        "does a conda `pytorch` package (install torch and torch-neuronx with pip instead).",
        "torch-neuronx exists only for torch 2.13.0 (2.13.x) and 2.14.0 (2.14.x): \"install the torch-neuronx\n"
        "family that matches the PyTorch version\" (AWS Neuron docs, TorchNeuron overview (torch/index)). 2.14.0 is the default: the newest family, and\n"
        "the troubleshooting page calls 2.14.x the native backend (AWS Neuron docs, TorchNeuron overview (torch/index)).",
        "torch==2.3.1+cu121",
        "torch==2.14.0",
        "Review: a big torch upgrade; companion pins (torchvision, torchaudio) get NRN995 markers and code\n"
        "written for the old release may need changes.",
    ),
    "NRN992": CodeDoc(
        "add torch-neuronx pinned to torch's family (from the Neuron package repository)",
        "After the torch requirement, adds `torch-neuronx==2.13.*` or `==2.14.*` (matching torch), with a\n"
        "comment that it installs from the Neuron package repository and, in requirements files and conda\n"
        "pip sections, `--extra-index-url https://pip.repos.neuron.amazonaws.com`. Poetry tables and pip\n"
        "install commands get a marker instead. Nothing is added when torch-neuronx is already named.",
        "torch-neuronx is the Neuron backend (device `neuron`, autoloaded by torch, AWS Neuron docs, TorchNeuron overview (torch/index)). PyPI has only\n"
        "a placeholder; the real wheels are on the Neuron repository (the URL is public knowledge, not in the\n"
        "facts: unverified). Install into a fresh environment: a stock CUDA torch mixed with torch-neuronx\n"
        "causes version conflicts (AWS Neuron docs, TorchNeuron troubleshooting (torch/troubleshooting)).",
        "torch==2.14.0",
        "torch==2.14.0\n# torch-neuronx installs from the Neuron package repository, not PyPI (...)\n"
        "# install into a fresh environment: never mix a stock (CUDA) torch with torch-neuronx\n"
        "--extra-index-url https://pip.repos.neuron.amazonaws.com\ntorch-neuronx==2.14.*",
        "Review: a new dependency from a new index.",
    ),
    "NRN993": CodeDoc(
        "CUDA wheel index -> CPU index; NVIDIA index commented out",
        "`https://download.pytorch.org/whl/cu121` (any cuXXX) becomes `.../whl/cpu` in requirements options,\n"
        "pip commands and TOML sources; an NVIDIA pip index (pypi.nvidia.com, pypi.ngc.nvidia.com) line is\n"
        "commented out; a conda `nvidia` channel is marked.",
        "torch-neuronx runs on the CPU build of torch: the TorchNeuron package installs torch from the CPU\n"
        "wheel index (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile), pre-release snapshot; inference for released wheels).",
        "--extra-index-url https://download.pytorch.org/whl/cu121",
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "Review: other packages resolved from that index change too.",
    ),
    "NRN994": CodeDoc(
        "CUDA-only package: commented out (kernels) or marked (libraries)",
        "Packages that only build or run with CUDA kernels (flash-attn, apex, xformers, mamba-ssm,\n"
        "causal-conv1d, transformer-engine, cupy-cuda*, nvidia-* runtime wheels, pytorch-cuda, cudatoolkit)\n"
        "are commented out with a marker saying what replaces them; libraries with a CPU build or a\n"
        "framework role (bitsandbytes, deepspeed, triton, liger-kernel, pynvml, onnxruntime-gpu, vllm) get\n"
        "a marker. A requirement not alone on its line is only marked.",
        "They cannot run on Trainium (torch-neuronx source, torch_neuronx/neuron.py list no CUDA kernels; the Python rules NRN901-NRN908 mark\n"
        "their imports). Commenting out keeps `pip install -r` working while keeping the line visible.",
        "flash-attn==2.5.8",
        "# porter: NRN994 flash-attn builds CUDA kernels only; use torch.nn.functional.scaled_dot_product_attention\n"
        "# flash-attn==2.5.8",
        "Review: the code importing the package must change too (see the Python findings).",
    ),
    "NRN995": CodeDoc(
        "companion pin of a re-pinned torch (torchvision, torchaudio, ...): review marker",
        "When torch is re-pinned (NRN991), exact pins of torchvision, torchaudio, torchtext, torchdata,\n"
        "torchrec, torchao are marked.",
        "Those releases are built against one torch release; the pairing for torch 2.13/2.14 is not in the\n"
        "facts (unverified), so porter does not guess it.",
        "torchvision==0.18.1",
        "# porter: NRN995 torchvision is pinned for the old torch; pin the release built for torch 2.14.0\n"
        "torchvision==0.18.1",
        "Marker only.",
    ),
}

FILE_CODES: dict[str, str] = {code: doc.summary for code, doc in DOCS.items()}
