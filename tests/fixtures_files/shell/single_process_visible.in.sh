#!/bin/bash
# evaluate on one GPU
CUDA_VISIBLE_DEVICES=1 python eval.py --checkpoint last.pt
