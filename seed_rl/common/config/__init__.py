"""Configuration: the learner's shared flags, their checks and transfer to actors, run setups."""
