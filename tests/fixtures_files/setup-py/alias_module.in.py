import setuptools

setuptools.setup(
    name="alias",
    install_requires=("torch==2.14.0+cu121", "einops"),
)
