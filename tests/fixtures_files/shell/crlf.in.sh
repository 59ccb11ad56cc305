#!/bin/sh
export CUDA_VISIBLE_DEVICES=0
python -m torch.distributed.launch --nproc_per_node 2 train.py
