"""Tests of the runtime's episode statistics: counting in the inference step, reporting."""

import numpy as np
import pytest
import tensorflow as tf

from seed_rl.agents.r2d2 import learner as r2d2_learner
from seed_rl.common.learner_runtime import episodes
from seed_rl.common.structures import EnvOutput
from seed_rl.launch import progress_monitor
from tests.common.summaries import read_scalars

pytestmark = pytest.mark.timeout(60)


def _step(stats, env_ids, rewards, raw_rewards, done, repeats=4):
  n = len(env_ids)
  env_outputs = EnvOutput(tf.constant(rewards, tf.float32), tf.constant(done),
                          tf.zeros([n, 1]), tf.zeros([n], tf.bool), tf.zeros([n], tf.int32))
  stats.update(tf.constant(env_ids, tf.int32), env_outputs, tf.constant(raw_rewards, tf.float32),
               repeats)


def test_episode_ends_with_the_reward_that_comes_with_done():
  stats = episodes.EpisodeStats(num_envs=3)
  # First steps of env 0 and 2 (reward 0), then three more steps of env 0, the last with done:
  # its reward (5) is the old episode's last one; the episode had 3 actions of 4 frames.
  _step(stats, [0, 2], [0., 0.], [0., 0.], [False, False])
  _step(stats, [0], [1.], [10.], [False])
  _step(stats, [0], [2.], [20.], [False])
  assert stats.dequeue_finished().env_ids.tolist() == []
  _step(stats, [0, 2], [5., 7.], [50., 70.], [True, False])
  finished = stats.dequeue_finished()
  assert finished.env_ids.tolist() == [0]
  assert finished.episode_returns.tolist() == [8.]
  assert finished.episode_raw_returns.tolist() == [80.]
  assert finished.episode_num_frames.tolist() == [12]
  assert stats.dequeue_finished().env_ids.tolist() == []  # Each episode is reported once.


def test_reset_forgets_the_running_episode_of_a_restarted_actor():
  stats = episodes.EpisodeStats(num_envs=2)
  _step(stats, [0, 1], [3., 3.], [3., 3.], [False, False])
  stats.reset(tf.constant([1]))
  _step(stats, [0, 1], [1., 1.], [1., 1.], [True, True])
  finished = stats.dequeue_finished()
  assert finished.env_ids.tolist() == [0, 1]
  assert finished.episode_returns.tolist() == [4., 1.]
  assert finished.episode_num_frames.tolist() == [4, 0]


def _infos(env_ids, returns):
  n = len(env_ids)
  return episodes.EpisodeInfo(np.full(n, 8), np.array(returns, np.float32),
                              np.array(returns, np.float32) * 10, np.array(env_ids))


def _logged_lines(monkeypatch):
  logged = []
  monkeypatch.setattr(episodes.logging, 'info', lambda message, *args: logged.append(
      message % tuple(args)))
  return logged


def test_reporter_groups_training_episodes_and_reports_eval_ones_apart(tmp_path, monkeypatch):
  writer = tf.summary.create_file_writer(str(tmp_path))
  reporter = episodes.EpisodeReporter(num_training_envs=3, log_episode_frequency=2)
  logged = _logged_lines(monkeypatch)
  with writer.as_default(step=7):
    reporter.report(_infos([0, 3, 1, 2], [1., 100., 3., 5.]), iteration=2, now=0.)
    reporter.report(_infos([1], [7.]), iteration=3, now=1.)  # Completes the pending group.
  writer.flush()
  scalars = read_scalars(tmp_path)
  assert [value for _, value in scalars['episode_return']] == [2., 6.]
  assert [value for _, value in scalars['episode_raw_return']] == [20., 60.]
  assert [value for _, value in scalars['episode_num_frames']] == [8., 8.]
  assert [value for _, value in scalars['eval/episode_return']] == [100.]
  # One line per kind of environment: the latest episode, with the others counted in it.
  assert logged == [
      'Return: 5.000000 Raw return: 50.000000 Frames: 8 Env id: 2 (training) Iteration: 2 '
      '(+2 more episodes since the last line: mean return 2.000000, mean raw return '
      '20.000000, mean frames 8.0)',
      'Return: 100.000000 Raw return: 1000.000000 Frames: 8 Env id: 3 (eval) Iteration: 2']


def test_the_lines_of_an_exploring_agent_s_training_episodes_say_so(monkeypatch):
  reporter = episodes.EpisodeReporter(num_training_envs=2, log_episode_frequency=1,
                                      exploration=r2d2_learner.R2D2Agent.exploration)
  logged = _logged_lines(monkeypatch)
  reporter.report(_infos([0, 2], [1., 9.]), iteration=4, now=0.)
  assert logged == [
      'Return (exploring, epsilon-greedy): 1.000000 Raw return: 10.000000 Frames: 8 Env id: 0 '
      '(training) Iteration: 4',
      'Return: 9.000000 Raw return: 90.000000 Frames: 8 Env id: 2 (eval) Iteration: 4']
  log = '\n'.join(f'I0 x] {line}' for line in logged)
  assert progress_monitor.parse_episode_returns(log, 'training') == [1.]
  assert progress_monitor.parse_episode_returns(log, 'eval') == [9.]


def test_episode_lines_come_at_most_every_period_and_account_for_every_episode(monkeypatch):
  reporter = episodes.EpisodeReporter(num_training_envs=4, log_episode_frequency=1,
                                      line_period=5.)
  logged = _logged_lines(monkeypatch)
  returns = []
  for second in range(12):  # An episode a second.
    returns.append(float(second))
    reporter.report(_infos([second % 4], [second]), iteration=second, now=float(second))
  assert len(logged) == 3  # At 0, 5 and 10 s.
  assert logged[1].startswith('Return: 5.000000 ') and '(+4 more episodes' in logged[1]
  reporter.report(_infos([], []), iteration=12, now=12.)
  assert len(logged) == 3  # Nothing new is due yet.
  reporter.flush()  # At the end of training, the episode not shown yet.
  assert len(logged) == 4 and logged[3].startswith('Return: 11.000000 ')
  # The lines account for every episode, each shown or counted with the mean of its line.
  parsed = progress_monitor.parse_episode_returns('\n'.join(f'I0 x] {line}' for line in logged))
  assert len(parsed) == len(returns) and np.mean(parsed) == pytest.approx(np.mean(returns))
  reporter.flush()
  assert len(logged) == 4  # Flushed once.
