#!/bin/bash
#SBATCH --nodes=2                   # number of nodes
#SBATCH --gres=gpu:4                # number of GPUs per node

export LAUNCHER="accelerate launch \
    --num_processes $((SLURM_NNODES * 4)) \
    --mixed_precision 'fp16' \
    "
srun $LAUNCHER train.py
