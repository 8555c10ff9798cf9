"""TensorFlow-free operator tools: run_local.sh's Python side, flag checks, progress monitor."""
