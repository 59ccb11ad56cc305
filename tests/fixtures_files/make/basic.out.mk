# Training targets
PYTHON ?= python
NPROC  ?= 8

train:
# porter: NRN391 --nproc_per_node=$(NPROC) counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
	torchrun --nproc_per_node=$(NPROC) train.py

debug:
	NEURON_LAUNCH_BLOCKING=1 NEURON_RT_VISIBLE_CORES=0 $(PYTHON) train.py --steps 2

.PHONY: train debug
