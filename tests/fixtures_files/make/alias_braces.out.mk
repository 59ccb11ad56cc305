gpu-info:
# porter: NRN196 nvidia-smi does not exist on Trainium: use neuron-ls / neuron-top
	@nvidia-smi -L

run:
# porter: NRN391 --nproc-per-node=4 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
	torchrun --nproc-per-node=4 \
		train.py
