"""R2D2's Q-network for Gymnasium's vector observations, under this module's older path; it
lives in `seed_rl.agents.r2d2.networks`."""

# pylint: disable=unused-import  (the names this module has always had)
from seed_rl.agents.r2d2.networks import AgentOutput
from seed_rl.agents.r2d2.networks import RecurrentQNetwork
