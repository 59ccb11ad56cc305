from setuptools import find_packages, setup

REQUIRED = [
    "torch==2.14.0",  # CUDA wheel
    # torch-neuronx installs from the Neuron package repository, not PyPI (PyPI has only a placeholder)
    # install into a fresh environment: never mix a stock (CUDA) torch with torch-neuronx
    "torch-neuronx==2.14.*",
    "numpy",
    # porter: NRN994 xformers is CUDA-only; use torch.nn.functional.scaled_dot_product_attention
    # 'xformers>=0.0.26',
]

setup(
    name="trainer",
    packages=find_packages(),
    install_requires=REQUIRED,
    # porter: NRN994 flash-attn builds CUDA kernels only; use torch.nn.functional.scaled_dot_product_attention
    extras_require={"kernels": ["flash-attn==2.5.8"]},
)
