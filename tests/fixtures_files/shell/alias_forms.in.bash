CUDA_LAUNCH_BLOCKING=1 CUDA_VISIBLE_DEVICES=0 python3 -u -m torch.distributed.run --nproc-per-node 4 train.py
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True accelerate launch --num_processes 8 --mixed_precision=fp16 train.py --fp16
deepspeed --num_gpus=8 train.py --deepspeed ds_config.json
pip install "torch==2.3.1+cu121" torchvision --index-url https://download.pytorch.org/whl/cu121
pip install flash-attn --no-build-isolation
