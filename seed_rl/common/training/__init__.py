"""Learning building blocks agents share: optimizers, entropy cost, PopArt, statistics, replay."""
