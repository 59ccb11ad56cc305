#!/bin/bash
#SBATCH --nodes=2                   # number of nodes
# porter: NRN395 --gres=gpu:4 asks Slurm for GPUs: request Trainium nodes (Neuron devices) instead
#SBATCH --gres=gpu:4                # number of GPUs per node

# porter: NRN391 --num_processes=$((SLURM_NNODES * 4)) counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
export LAUNCHER="accelerate launch \
    --num_processes $((SLURM_NNODES * 4)) \
    --mixed_precision 'bf16' \
    "
srun $LAUNCHER train.py
