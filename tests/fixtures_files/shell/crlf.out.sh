#!/bin/sh
export NEURON_RT_VISIBLE_CORES=0
# porter: NRN391 --nproc_per_node=2 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
torchrun --nproc_per_node 2 train.py
