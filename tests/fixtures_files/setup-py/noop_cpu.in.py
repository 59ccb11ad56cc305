from setuptools import setup

setup(name="cpu-tool", install_requires=["numpy", "requests>=2"])
