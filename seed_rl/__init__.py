"""SEED RL: scalable and efficient deep RL with accelerated central inference, on TensorFlow 2.

The package's version is `__version__`; setup.py reads it from this file (without importing the
package), so it is written in one place.
"""

__version__ = '0.1.0'
