#!/bin/bash
# Multi-GPU launch (8x A100)
set -e

export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7   # all GPUs
export NCCL_DEBUG=INFO
# InfiniBand is off on this cluster
export NCCL_IB_DISABLE=1
export NCCL_P2P_LEVEL=NVL

echo "visible: $CUDA_VISIBLE_DEVICES"
nvidia-smi

python -m torch.distributed.launch \
	--nproc_per_node=8 \
	--master_port=29500 \
	--use_env \
	train.py --bf16   # trailing comment
