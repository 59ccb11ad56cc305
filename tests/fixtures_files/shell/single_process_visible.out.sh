#!/bin/bash
# evaluate on one GPU
NEURON_RT_VISIBLE_CORES=1 python eval.py --checkpoint last.pt
