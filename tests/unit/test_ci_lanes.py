"""make test's lanes (tools/dev/test.sh): every integration test file runs in exactly one of the two integration lanes,
and the second lane's session PoD has addresses of its own; every molecule scenario runs in exactly one of the two
molecule lanes, and the scenarios of one lane never share addresses with those of the other."""

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


def _molecule_lane(target):
    line = [text for text in subprocess.run(['make', '-s', '-n', '-o', 'setup', target], cwd=REPO, capture_output=True,
                                            text=True, check=True, timeout=60).stdout.splitlines() if 'molecule.sh' in text][0]
    return line.split('molecule.sh', 1)[1].split()


def _prefix(scenario):
    with open(os.path.join(REPO, 'molecule', scenario, 'molecule.yml'), encoding='utf-8') as handle:
        return re.search(r'NPUOPS_POD_PREFIX: ([0-9.]+)', handle.read()).group(1)


def test_every_molecule_scenario_runs_in_exactly_one_lane_on_addresses_of_its_own():
    scenarios = sorted(name for name in os.listdir(os.path.join(REPO, 'molecule'))
                       if os.path.isfile(os.path.join(REPO, 'molecule', name, 'molecule.yml')))
    first, second = _molecule_lane('molecule-1'), _molecule_lane('molecule-2')
    assert first and second and sorted(first + second) == scenarios
    # the lanes run at the same time: no prefix of one lane is used in the other
    assert not {_prefix(name) for name in first} & {_prefix(name) for name in second}
    with open(os.path.join(REPO, 'tools', 'dev', 'test.sh'), encoding='utf-8') as handle:
        lanes = handle.read()
    assert '[molecule-1]="molecule-1"' in lanes and '[molecule-2]="molecule-2"' in lanes
