#!/bin/bash
# 4-GPU DDP runs, then a single-GPU evaluation (renamed: one process)
CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 train.py
CUDA_VISIBLE_DEVICES=0,1 accelerate launch train.py
CUDA_VISIBLE_DEVICES=0 python eval.py
