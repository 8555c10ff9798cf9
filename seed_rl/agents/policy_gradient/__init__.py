"""Configurable on-policy agent (PPO, V-trace, AWR, V-MPO), assembled with gin."""
