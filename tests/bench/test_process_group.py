"""bench/process_group.py: a benchmark stopped with SIGTERM leaves no process behind; the
environment variables and TensorFlow thread settings its processes get."""

import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from bench import process_group
from tests.processes import ROOT

_BENCH = textwrap.dedent('''
    import pathlib, sys, time
    from bench import process_group
    with process_group.ProcessGroup(pathlib.Path(sys.argv[1]), 'timeit',
                                    ['-n', '1', '-r', '1', '-s', 'import time',
                                     'time.sleep(120)']) as group:
      print(group.start('sleeper', []).pid, flush=True)
      time.sleep(120)
''')


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  return True


@pytest.mark.timeout(60)
def test_sigterm_to_a_benchmark_kills_the_processes_it_started(tmp_path):
  bench = subprocess.Popen([sys.executable, '-c', _BENCH, str(tmp_path)], cwd=ROOT,
                           stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
  child_pid = None
  try:
    child_pid = int(bench.stdout.readline())
    assert _alive(child_pid)
    bench.send_signal(signal.SIGTERM)
    assert bench.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.time() + 10
    while _alive(child_pid) and time.time() < deadline:
      time.sleep(0.1)
    assert not _alive(child_pid)
  finally:
    bench.kill()
    bench.wait()
    if child_pid is not None and _alive(child_pid):
      os.kill(child_pid, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_extra_env_adds_and_removes_variables(tmp_path, monkeypatch):
  monkeypatch.setenv('SEED_RL_TEST_KEPT', 'kept')
  monkeypatch.setenv('SEED_RL_TEST_REMOVED', 'removed')
  printer = ('import os; print(os.environ.get("SEED_RL_TEST_KEPT"), '
             'os.environ.get("SEED_RL_TEST_REMOVED"), os.environ.get("SEED_RL_TEST_ADDED"))')
  with process_group.ProcessGroup(tmp_path, 'timeit', ['-n', '1', '-r', '1', '-s', printer,
                                                       'pass']) as group:
    group.start('child', [], {'SEED_RL_TEST_REMOVED': None, 'SEED_RL_TEST_ADDED': 'added'}
                ).wait(timeout=30)
  assert (tmp_path / 'child.log').read_text().split()[:3] == ['kept', 'None', 'added']


# Starts a grandchild that sleeps, prints its pid, then sleeps.
_PARENT = ('import subprocess, sys, time\n'
           'child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])\n'
           'print(child.pid, flush=True)\ntime.sleep(120)')


@pytest.mark.timeout(60)
def test_own_sessions_kill_what_a_process_started_and_python_picks_the_interpreter(tmp_path):
  # Another name for this interpreter, as another virtualenv's python would be.
  python = tmp_path / 'other_python'
  python.symlink_to(sys.executable)
  with process_group.ProcessGroup(tmp_path, 'timeit', ['-n', '1', '-r', '1', '-s', 'import sys',
                                                       'print(sys.executable)'],
                                  python=str(python)) as group:
    group.start('printer', []).wait(timeout=30)
  assert (tmp_path / 'printer.log').read_text().split()[0] == str(python)

  grandchild = None
  try:
    with process_group.ProcessGroup(tmp_path, 'timeit', ['-n', '1', '-r', '1', '-s', _PARENT,
                                                         'pass'], own_sessions=True) as group:
      parent = group.start('parent', [])
      log = tmp_path / 'parent.log'
      deadline = time.time() + 30
      while not log.read_text().strip() and time.time() < deadline:
        time.sleep(0.1)
      grandchild = int(log.read_text().split()[0])
      assert os.getsid(parent.pid) == parent.pid != os.getsid(0)
      assert os.getsid(grandchild) == parent.pid
    deadline = time.time() + 10
    while _alive(grandchild) and time.time() < deadline:
      time.sleep(0.1)
    assert not _alive(grandchild)
  finally:
    if grandchild is not None and _alive(grandchild):
      os.kill(grandchild, signal.SIGKILL)


def test_learner_threads_follow_run_local(monkeypatch):
  for name in process_group.THREAD_VARIABLES:
    monkeypatch.delenv(name, raising=False)
  cores = len(os.sched_getaffinity(0))
  assert process_group.learner_thread_env(cores) == {'TF_NUM_INTRAOP_THREADS': '1',
                                                     'TF_NUM_INTEROP_THREADS': '2'}
  assert process_group.learner_thread_env(cores - 1) == {}
  monkeypatch.setenv('TF_NUM_INTEROP_THREADS', '3')
  assert process_group.learner_thread_env(cores) == {}


def test_learner_threads_are_those_run_local_sets():
  """run_local.sh sets its learner's threads in bash: the values and the rule must agree."""
  script = (ROOT / 'run_local.sh').read_text()
  assignment = re.search(r'learner_env=\(env ([^)]*)\)', script).group(1).split()
  assert dict(a.split('=') for a in assignment) == dict(zip(process_group.THREAD_VARIABLES,
                                                            ('1', '2')))
  # Set where the actors alone fill the cores (nproc counts the cores this process may use).
  assert '[ "$(nproc)" -le "$NUM_ACTORS" ]' in script
  assert all(f'${{{name}:-}}' in script for name in process_group.THREAD_VARIABLES)


@pytest.mark.timeout(60)
def test_cpu_seconds_count_what_a_process_computes_not_what_it_sleeps():
  # Computes until it used 0.6 s of CPU time, says so, then sleeps.
  child = subprocess.Popen(
      [sys.executable, '-c', 'import time\nwhile time.process_time() < 0.6: pass\n'
       'print("computed", flush=True)\ntime.sleep(60)'], stdout=subprocess.PIPE, text=True)
  try:
    assert child.stdout.readline().strip() == 'computed'
    computed = process_group.cpu_seconds(child.pid)
    assert computed >= 0.55  # In clock ticks (10 ms).
    time.sleep(0.5)
    assert process_group.cpu_seconds(child.pid) - computed < 0.1
  finally:
    child.kill()
    child.wait()
  assert math.isnan(process_group.cpu_seconds(child.pid))
