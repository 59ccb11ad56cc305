# syntax=docker/dockerfile:1
# porter: NRN190 CUDA base image: build FROM a Neuron Deep Learning Container (public.ecr.aws/neuron, pytorch-training-neuronx with torch-neuronx 2.13/2.14)
FROM nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04

# porter: NRN392 NCCL_DEBUG: not read on Trainium: collectives use the neuron process group (multi-node: EFA, FI_* settings)
ENV NCCL_DEBUG=INFO \
    NEURON_RT_VISIBLE_CORES=0,1
# porter: NRN992 install torch==2.14.0 and torch-neuronx==2.14.* (--extra-index-url https://pip.repos.neuron.amazonaws.com) in a fresh environment
RUN pip install --no-cache-dir \
      torch==2.3.1 \
      --index-url https://download.pytorch.org/whl/cpu
# porter: NRN994 flash-attn builds CUDA kernels only; use torch.nn.functional.scaled_dot_product_attention
RUN pip install flash-attn==2.5.8  # needs nvcc
COPY . /app
# porter: NRN391 --nproc_per_node=8 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
CMD ["torchrun", "--nproc_per_node=8", "train.py"]
