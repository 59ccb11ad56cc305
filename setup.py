"""Package layout only (metadata lives in pyproject.toml).

``rules/`` sits at the top of the repository but installs as ``porter.rules``; every package under
``porter/`` is found automatically.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["porter", "porter.*"]), "porter.rules"],
    package_dir={"porter.rules": "rules"},
)
