# porter: NRN190 CUDA base image: build FROM a Neuron Deep Learning Container (public.ecr.aws/neuron, pytorch-training-neuronx with torch-neuronx 2.13/2.14)
ARG BASE=nvcr.io/nvidia/pytorch:24.05-py3
# porter: NRN190 CUDA base image: build FROM a Neuron Deep Learning Container (public.ecr.aws/neuron, pytorch-training-neuronx with torch-neuronx 2.13/2.14)
FROM --platform=linux/amd64 pytorch/pytorch:2.3.1-cuda12.1-cudnn8-devel AS build
# porter: NRN193 /usr/local/cuda, CUDA_HOME: CUDA-only setting, no effect on Trainium
ENV CUDA_HOME=/usr/local/cuda
FROM ${BASE}
