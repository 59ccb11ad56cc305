# Training targets
PYTHON ?= python
NPROC  ?= 8

train:
	$(PYTHON) -m torch.distributed.launch --nproc_per_node=$(NPROC) train.py

debug:
	CUDA_LAUNCH_BLOCKING=1 CUDA_VISIBLE_DEVICES=0 $(PYTHON) train.py --steps 2

.PHONY: train debug
