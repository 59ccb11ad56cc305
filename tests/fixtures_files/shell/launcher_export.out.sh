#!/bin/bash
# porter: NRN191 dropped (commented out): torchrun gives each rank its own NeuronCore
# export CUDA_VISIBLE_DEVICES=0,1,2,3
# porter: NRN391 --nproc_per_node=4 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
torchrun --nproc_per_node=4 train.py
