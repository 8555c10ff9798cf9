"""What every agent shares: the original SEED RL's public modules, and subpackages by job."""
