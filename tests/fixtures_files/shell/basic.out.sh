#!/bin/bash
# Multi-GPU launch (8x A100)
set -e

# porter: NRN191 dropped (commented out): torchrun gives each rank its own NeuronCore
# export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7   # all GPUs
# porter: NRN392 NCCL_DEBUG, NCCL_IB_DISABLE, NCCL_P2P_LEVEL: not read on Trainium: collectives use the neuron process group (multi-node: EFA, FI_* settings)
export NCCL_DEBUG=INFO
# InfiniBand is off on this cluster
export NCCL_IB_DISABLE=1
export NCCL_P2P_LEVEL=NVL

echo "visible: $NEURON_RT_VISIBLE_CORES"
# porter: NRN196 nvidia-smi does not exist on Trainium: use neuron-ls / neuron-top
nvidia-smi

# porter: NRN391 --nproc_per_node=8 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
torchrun \
	--nproc_per_node=8 \
	--master_port=29500 \
	train.py --bf16   # trailing comment
