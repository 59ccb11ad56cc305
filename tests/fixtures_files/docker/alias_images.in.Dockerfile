ARG BASE=nvcr.io/nvidia/pytorch:24.05-py3
FROM --platform=linux/amd64 pytorch/pytorch:2.3.1-cuda12.1-cudnn8-devel AS build
ENV CUDA_HOME=/usr/local/cuda
FROM ${BASE}
