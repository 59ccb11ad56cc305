"""porter: port CUDA-centric PyTorch training code to AWS Trainium (TorchNeuron, device ``neuron``)."""

__version__ = "0.1.0"
