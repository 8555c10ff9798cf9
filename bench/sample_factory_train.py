r"""Sample Factory 2.1.1's Atari training (`sf_examples.atari.train_atari`) with ale-py's ids
registered in every process: the Sample Factory side of `bench/sample_factory_side_by_side.py`.

  .venv-sample-factory/bin/python -m bench.sample_factory_train --env=atari_pong \
      --experiment=pong --train_dir=/tmp/sf --device=cpu [Sample Factory's flags]

Runs in Sample Factory's own virtualenv (`bench/sample_factory_venv.sh`), so it imports nothing
of seed_rl. Sample Factory's example makes its envs by id (`PongNoFrameskip-v4`) in rollout
worker processes it starts with `spawn`, and nothing there registers ale-py's ids with gymnasium:
ale-py's import would, but with gymnasium < 1.1 (Sample Factory's) its vector env fails to import
and the registration is skipped. The env factory registered here registers them itself, in
whichever process makes an env.

Sample Factory 2.1.1's learner fails on its first training step with `--with_vtrace=True`: its
train summaries read the minibatch's GAE advantages, which V-trace's path never computes
(`AttributeError: ... 'advantages'`; the summaries are not optional, and fixed upstream only
after 2.1.1). `record_summaries_with_vtrace` hands them V-trace's advantages of the minibatch
instead, which touches nothing the training step computes. Every process Sample Factory spawns
runs this module again as its main module (`__mp_main__`), so the patch holds in the learner's
process too.
"""

import functools
import sys
from typing import Any, Callable, Optional


def record_summaries_with_vtrace(record_summaries: Callable[[Any, Any], Any]
                                 ) -> Callable[[Any, Any], Any]:
  """Sample Factory's `Learner._record_summaries`, given the minibatch's V-trace advantages (the
  loss's `adv`) as `mb.advantages` where the minibatch has no GAE advantages."""

  @functools.wraps(record_summaries)
  def wrapper(learner: Any, train_loop_vars: Any) -> Any:
    if 'advantages' not in train_loop_vars.mb and 'adv' in train_loop_vars:
      from sample_factory.utils.attr_dict import AttrDict  # pylint: disable=g-import-not-at-top
      train_loop_vars = AttrDict(dict(
          train_loop_vars, mb=AttrDict(dict(train_loop_vars.mb, advantages=train_loop_vars.adv))))
    return record_summaries(learner, train_loop_vars)

  return wrapper


def patch_learner() -> None:
  """Wraps Sample Factory's `Learner._record_summaries` (once per process) so that V-trace's
  training step can record its summaries."""
  from sample_factory.algo.learning import learner  # pylint: disable=g-import-not-at-top
  if not getattr(learner.Learner._record_summaries, '__wrapped__', None):
    learner.Learner._record_summaries = record_summaries_with_vtrace(
        learner.Learner._record_summaries)


def make_atari_env(env_name: str, cfg: Any, env_config: Any,
                   render_mode: Optional[str] = None) -> Any:
  """Sample Factory's Atari env of `env_name` (e.g. `atari_pong`), its wrappers included, with
  ale-py's v0 and v4 ids registered in this process first."""
  # pylint: disable=g-import-not-at-top
  import gymnasium
  from ale_py import registration
  from sf_examples.atari import atari_utils
  if atari_utils.atari_env_by_name(env_name).env_id not in gymnasium.registry:
    registration.register_v0_v4_envs()
  return atari_utils.make_atari_env(env_name, cfg, env_config, render_mode)


def main() -> int:
  """Registers the Atari envs with `make_atari_env` and trains as Sample Factory's Atari example
  does, on the command line's flags; returns Sample Factory's exit status."""
  # pylint: disable=g-import-not-at-top
  from sample_factory.envs.env_utils import register_env
  from sample_factory.train import run_rl
  from sf_examples.atari import atari_utils
  from sf_examples.atari import train_atari
  for spec in atari_utils.ATARI_ENVS:
    register_env(spec.name, make_atari_env)
  return run_rl(train_atari.parse_atari_args())


# Here rather than in main(): Sample Factory's spawned processes, the learner's among them, run
# this module as `__mp_main__` and never call main().
if __name__ in ('__main__', '__mp_main__'):
  patch_learner()

if __name__ == '__main__':
  sys.exit(main())
