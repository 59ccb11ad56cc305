#!/usr/bin/env bash
# Launch the sample job on one 8-GPU node.
set -euo pipefail

export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export NCCL_DEBUG=INFO
export NCCL_IB_DISABLE=1   # no InfiniBand on this cluster

NGPUS=8
nvidia-smi --query-gpu=name,memory.total --format=csv

python -m torch.distributed.launch \
    --nproc_per_node=${NGPUS}   \
    --use_env \
    train.py --config configs/train.yaml "$@"
