# porter: NRN191 CUDA_VISIBLE_DEVICES=0 dropped: torchrun gives each rank its own NeuronCore
# porter: NRN391 --nproc-per-node=4 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
NEURON_LAUNCH_BLOCKING=1 torchrun --nproc-per-node 4 train.py
# porter: NRN391 --num_processes=8 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
# porter: NRN291 --fp16: train in bf16 on Trainium (--bf16 where the script takes it, e.g. TrainingArguments)
# porter: NRN193 PYTORCH_CUDA_ALLOC_CONF: CUDA-only setting, no effect on Trainium
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True accelerate launch --num_processes 8 --mixed_precision=bf16 train.py --fp16
# porter: NRN391 --num_gpus=8 counts GPUs: one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)
deepspeed --num_gpus=8 train.py --deepspeed ds_config.json
# porter: NRN992 install torch==2.14.0 and torch-neuronx==2.14.* (--extra-index-url https://pip.repos.neuron.amazonaws.com) in a fresh environment
pip install "torch==2.3.1" torchvision --index-url https://download.pytorch.org/whl/cpu
# porter: NRN994 flash-attn builds CUDA kernels only; use torch.nn.functional.scaled_dot_product_attention
pip install flash-attn --no-build-isolation
