import setuptools

setuptools.setup(
    name="alias",
    # torch-neuronx installs from the Neuron package repository, not PyPI (PyPI has only a placeholder)
    # install into a fresh environment: never mix a stock (CUDA) torch with torch-neuronx
    install_requires=("torch==2.14.0", "torch-neuronx==2.14.*", "einops"),
)
