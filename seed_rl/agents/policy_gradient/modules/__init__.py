"""TensorFlow modules of the configurable on-policy agent: advantages, losses, normalizers."""
