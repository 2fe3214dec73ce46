"""make test's lanes (tools/dev/test.sh): every integration test file runs in exactly one of the two integration lanes,
and the second lane's session PoD has addresses of its own."""

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _dry_run(target):
    proc = subprocess.run(['make', '-s', '-n', '-o', 'setup', target], cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=60)
    return [line for line in proc.stdout.splitlines() if 'pytest' in line][0]


def test_every_integration_file_runs_in_exactly_one_lane():
    files = sorted(os.path.join('tests', 'integration', name) for name in os.listdir(os.path.join(REPO, 'tests', 'integration'))
                   if name.startswith('test_') and name.endswith('.py'))
    first = re.findall(r'tests/integration/test_\w+\.py', _dry_run('integration-1'))
    second = re.findall(r'tests/integration/test_\w+\.py', _dry_run('integration-2'))
    assert second and first
    assert sorted(first + second) == files, 'a file in no lane or in both'
    # each lane keeps the order of the file names (later files may rely on what earlier ones left on the PoD)
    assert first == sorted(first) and second == sorted(second)


def test_the_second_lane_has_its_own_session_pod():
    line = _dry_run('integration-2')
    prefix = re.search(r'NPUOPS_IT_PREFIX=\$\{NPUOPS_IT_PREFIX_2:-([0-9.]+)\}', line).group(1)
    with open(os.path.join(REPO, 'tests', 'integration', 'conftest.py'), encoding='utf-8') as handle:
        default = re.search(r'NPUOPS_IT_PREFIX", "([0-9.]+)"', handle.read()).group(1)
    own = set()
    for name in os.listdir(os.path.join(REPO, 'tests', 'integration')):
        if name.endswith('.py'):
            with open(os.path.join(REPO, 'tests', 'integration', name), encoding='utf-8') as handle:
                own |= set(re.findall(r'os\.environ\.get\("NPUOPS_IT_\w+_PREFIX", "([0-9.]+)"\)', handle.read()))
    assert prefix != default and prefix not in own, (prefix, default, own)
    with open(os.path.join(REPO, 'tools', 'dev', 'test.sh'), encoding='utf-8') as handle:
        lanes = handle.read()
    assert '[integration-1]="integration-1"' in lanes and '[integration-2]="integration-2"' in lanes
