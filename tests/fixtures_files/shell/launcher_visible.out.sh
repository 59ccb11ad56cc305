#!/bin/bash
# 4-GPU DDP runs, then a single-GPU evaluation (renamed: one process)
# porter: NRN191 CUDA_VISIBLE_DEVICES=0,1,2,3 dropped: torchrun gives each rank its own NeuronCore
# porter: NRN391 --nproc_per_node=4 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
torchrun --nproc_per_node=4 train.py
# porter: NRN191 CUDA_VISIBLE_DEVICES=0,1 dropped: torchrun gives each rank its own NeuronCore
accelerate launch train.py
NEURON_RT_VISIBLE_CORES=0 python eval.py
