gpu-info:
	@nvidia-smi -L

run:
	${PYTHON} -m torch.distributed.run --nproc-per-node=4 \
		train.py
