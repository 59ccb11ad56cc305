#!/usr/bin/env bash
# Already on Trainium: nothing to port.
export NEURON_RT_VISIBLE_CORES=0-63
torchrun --nproc_per_node=64 train.py --device neuron
python evaluate.py --device cpu   # the word cuda in a comment is fine
