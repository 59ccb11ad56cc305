# syntax=docker/dockerfile:1
FROM nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04

ENV NCCL_DEBUG=INFO \
    CUDA_VISIBLE_DEVICES=0,1
RUN pip install --no-cache-dir \
      torch==2.3.1+cu121 \
      --index-url https://download.pytorch.org/whl/cu121
RUN pip install flash-attn==2.5.8  # needs nvcc
COPY . /app
CMD ["python", "-m", "torch.distributed.launch", "--nproc_per_node=8", "train.py"]
