"""TensorFlow-free operator tools: local runs (run_local.sh's Python side), flag checks, progress monitor."""
