"""Every plugin that ansible-doc or Galaxy lists for the collection has documentation.

Galaxy (galaxy-importer) lists the union of two enumerations: what ``ansible-doc --list`` finds, and
every ``.py`` file under ``plugins/<type>/``, named after the file. A filter file that holds filters
under other names therefore shows on Galaxy as an undocumented filter of the file's own name. Both
enumerations are checked here, with the venv's ansible-doc against this checkout's collections root
(tools/dev/collections_root.sh, linked by ``make setup`` and the root conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTION = 'npuops.ascend'

# ansible-doc plugin type -> directory under plugins/ (only the types ansible-doc documents)
DOC_TYPES = {
    'module': 'modules',
    'filter': 'filter',
    'test': 'test',
    'lookup': 'lookup',
    'callback': 'callback',
    'connection': 'connection',
    'inventory': 'inventory',
    'become': 'become',
    'cache': 'cache',
    'vars': 'vars',
    'strategy': 'strategy',
    'shell': 'shell',
    'cliconf': 'cliconf',
    'httpapi': 'httpapi',
    'netconf': 'netconf',
}
PRESENT_TYPES = [t for t in sorted(DOC_TYPES) if os.path.isdir(os.path.join(REPO, 'plugins', DOC_TYPES[t]))]

# Files under plugins/ that Galaxy would list without documentation: none. A file of several filters
# is named after one of them (its documentation is the .yml of that name); helpers shared by the
# filters live in plugins/plugin_utils/, which Galaxy does not list. Nothing may be added here; a
# file that no longer needs its entry makes the test fail until the entry goes.
KNOWN_UNDOCUMENTED_FILES = {}


def _ansible_doc():
    candidate = os.path.join(os.path.dirname(sys.executable), 'ansible-doc')
    if os.access(candidate, os.X_OK):
        return candidate
    return shutil.which('ansible-doc')


def _collections_root():
    script = os.path.join(REPO, 'tools', 'dev', 'collections_root.sh')
    if not os.path.isfile(script) or shutil.which('bash') is None:
        return None
    proc = subprocess.run(['bash', script, REPO], capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        return None
    root = proc.stdout.strip()
    link = os.path.join(root, 'ansible_collections', 'npuops', 'ascend')
    if not os.path.isdir(link) or os.path.realpath(link) != os.path.realpath(REPO):
        return None
    return root


@pytest.fixture(scope='module')
def ansible_doc():
    exe = _ansible_doc()
    if exe is None:
        pytest.skip('ansible-doc is not installed next to this Python (run make setup)')
    root = _collections_root()
    if root is None:
        pytest.skip('no ansible_collections root links to this checkout (run make setup)')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=root, ANSIBLE_NOCOLOR='1')
    env.pop('ANSIBLE_COLLECTIONS_PATHS', None)

    def run(*args):
        proc = subprocess.run([exe, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, 'ansible-doc %s failed (rc %d):\n%s' % (' '.join(args), proc.returncode, proc.stderr)
        return json.loads(proc.stdout or '{}')

    return run


def _plugin_files(plugin_dir):
    """The names Galaxy gives the .py files under a plugin directory (subdirectories joined with dots)."""
    names = set()
    for path, _dirs, files in os.walk(plugin_dir):
        for name in files:
            if not name.endswith('.py') or name == '__init__.py':
                continue
            rel = os.path.relpath(os.path.join(path, name[:-3]), plugin_dir)
            names.add(rel.replace(os.sep, '.'))
    return names


def _documented(doc):
    body = (doc or {}).get('doc') or {}
    return bool(body.get('short_description')) and bool(body.get('description'))


@pytest.mark.parametrize('plugin_type', PRESENT_TYPES)
def test_every_listed_plugin_is_documented(ansible_doc, plugin_type):
    plugin_dir = os.path.join(REPO, 'plugins', DOC_TYPES[plugin_type])
    listed = ansible_doc('--type', plugin_type, '--list', '--json', COLLECTION)
    prefix = COLLECTION + '.'
    listed = {name[len(prefix):]: summary for name, summary in listed.items() if name.startswith(prefix)}
    docs = {}
    if listed:
        raw = ansible_doc('--type', plugin_type, '--json', *sorted(prefix + name for name in listed))
        docs = {name[len(prefix):]: doc for name, doc in raw.items() if name.startswith(prefix)}

    problems = []
    for name in sorted(listed):
        if listed[name] == 'UNDOCUMENTED' or not _documented(docs.get(name)):
            problems.append('%s %s%s: ansible-doc lists it without documentation' % (plugin_type, prefix, name))

    known = KNOWN_UNDOCUMENTED_FILES.get(plugin_type, set())
    files = _plugin_files(plugin_dir)
    for name in sorted(files - known):
        if name not in listed or not _documented(docs.get(name)):
            where = os.path.join('plugins', DOC_TYPES[plugin_type], name.replace('.', os.sep) + '.py')
            problems.append('%s %s%s: Galaxy lists %s as a plugin of that name, which has no documentation '
                            '(name the file after one of its plugins, or move helper code to plugins/plugin_utils/)'
                            % (plugin_type, prefix, name, where))
    for name in sorted(known):
        if name not in files:
            problems.append('%s: KNOWN_UNDOCUMENTED_FILES names %s, which is gone: remove the entry' % (plugin_type, name))
        elif name in listed and _documented(docs.get(name)):
            problems.append('%s: KNOWN_UNDOCUMENTED_FILES names %s, which is documented now: remove the entry'
                            % (plugin_type, name))
    assert not problems, '\n'.join(problems)
