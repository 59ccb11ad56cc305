from setuptools import find_packages, setup

REQUIRED = [
    "torch==2.3.1+cu121",  # CUDA wheel
    "numpy",
    'xformers>=0.0.26',
]

setup(
    name="trainer",
    packages=find_packages(),
    install_requires=REQUIRED,
    extras_require={"kernels": ["flash-attn==2.5.8"]},
)
