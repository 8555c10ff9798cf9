r"""The gym V-trace entry point, whose environments log each episode's return and length.

Run as an actor of a `seed_rl.environments.gym.vtrace_main` learner (same flags); its
environments are the gym factory's, seeded and stepped the same way, and every finished episode
logs `Episode of env I: return R length N`. The learner logs evaluation episodes only when it
trains; this actor logs them even while training is paused.
"""

import gymnasium
from absl import app, logging

from seed_rl.common import entry_point
from seed_rl.environments.gym import env, vtrace_main


class LogEpisodes(gymnasium.Wrapper):
  """Logs the return and length of every episode of `env`; changes nothing else."""

  def __init__(self, wrapped: gymnasium.Env, env_id: int):
    super().__init__(wrapped)
    self._env_id = env_id
    self._return, self._length = 0., 0

  def reset(self, **kwargs):
    self._return, self._length = 0., 0
    return self.env.reset(**kwargs)

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    self._return += float(reward)
    self._length += 1
    if terminated or truncated:
      logging.info('Episode of env %d: return %g length %d', self._env_id, self._return,
                   self._length)
    return observation, reward, terminated, truncated, info


def create_environment(env_id, config):
  return LogEpisodes(env.create_environment(env_id, config), env_id)


def main(argv):
  entry_point.run(argv, create_environment, 'seed_rl.agents.vtrace.learner',
                  vtrace_main.create_agent, vtrace_main.create_optimizer)


if __name__ == '__main__':
  app.run(main)
