# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run site.yml in parts, as the AWX workflow of docs/awx/site-workflow.yml runs it, without AWX.

Every node of the workflow in order; a node whose job template is sliced runs as K ansible-playbook processes at once,
each on a pared copy of the inventory that holds only its slice (AWX's rule: the hosts sorted by name, slice k of K
gets hosts[k-1::K]; groups and hostvars of the other slices are gone), the others as one process on the whole
inventory. The next node starts when every process of this one succeeded ("on success" edges) or whatever they ended
with ("always" edges, from a node part to its PoD part); a failure before an "on success" edge stops the workflow with
its exit status.

  python3 tools/awx/run_in_parts.py -i INVENTORY --run-id ID [--slices K] [--workflow FILE] [--only-slice-lines]
                            [-- ansible-playbook options such as -e npuops_report_dir=/srv/r -e npuops_max_lost_nodes=1]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKFLOW = os.path.join(ROOT, 'docs', 'awx', 'site-workflow.yml')


def load_workflow(path):
    """``(templates by name, workflow nodes in edge order)``; an edge that skips or repeats a node is refused."""
    with open(path, encoding='utf-8') as handle:
        document = yaml.safe_load(handle)
    templates = dict((item['name'], item) for item in document['job_templates'])
    nodes = dict((item['identifier'], item) for item in document['workflow_job_template']['workflow_nodes'])

    def edges(item):
        related = item.get('related') or {}
        return [(edge['identifier'], kind) for kind in ('success_nodes', 'always_nodes')
                for edge in related.get(kind) or []]

    targets = set(name for item in nodes.values() for name, _kind in edges(item))
    roots = [name for name in nodes if name not in targets]
    if len(roots) != 1:
        raise SystemExit('%s: the workflow must start at one node, it starts at %s' % (path, roots or 'none'))
    order, current = [], roots[0]
    while current:
        if current in order:
            raise SystemExit('%s: the workflow loops back to %s' % (path, current))
        order.append(current)
        after = edges(nodes[current])
        if len(after) > 1:
            raise SystemExit('%s: %s has %d edges; this driver runs one chain' % (path, current, len(after)))
        nodes[current]['_always'] = bool(after) and after[0][1] == 'always_nodes'
        current = after[0][0] if after else None
    if len(order) != len(nodes):
        raise SystemExit('%s: nodes not on the chain: %s' % (path, sorted(set(nodes) - set(order))))
    return templates, [nodes[name] for name in order], document['workflow_job_template'].get('extra_vars') or {}


def awx_slices(hosts, count):
    """AWX's job slicing: the hosts sorted by name, slice k (1-based) of K gets ``hosts[k-1::K]``; empty slices dropped."""
    ordered = sorted(hosts)
    return [ordered[index::count] for index in range(count) if ordered[index::count]]


def pare_inventory(inventory, keep):
    """The exported inventory (``ansible-inventory --list --export``) holding only the hosts of ``keep``."""
    keep = set(keep)
    out = {'_meta': {'hostvars': dict((host, values) for host, values
                                      in (inventory.get('_meta') or {}).get('hostvars', {}).items() if host in keep)}}
    for name, group in inventory.items():
        if name == '_meta':
            continue
        group = dict(group)
        if 'hosts' in group:
            group['hosts'] = [host for host in group['hosts'] if host in keep]
        out[name] = group
    return out


def write_script(path, inventory):
    """The inventory as AWX hands it to a job: an executable script that prints it (``--list``) as JSON."""
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('#!%s\nimport json\nimport sys\nDATA = %r\nprint(DATA if "--list" in sys.argv else "{}")\n'
                     % (sys.executable, json.dumps(inventory)))
    os.chmod(path, 0o700)
    return path


def runner_job(pdd, inventory, playbook, variables, tags, extra):
    """A private data directory laid out as AWX lays one out for a job (project/, inventory/hosts, env/extravars,
    env/cmdline), and the ansible-runner command that runs it."""
    os.makedirs(os.path.join(pdd, 'project'))
    os.makedirs(os.path.join(pdd, 'inventory'))
    os.makedirs(os.path.join(pdd, 'env'))
    shutil.copy(playbook, os.path.join(pdd, 'project', os.path.basename(playbook)))
    shutil.copy(inventory, os.path.join(pdd, 'inventory', 'hosts'))
    with open(os.path.join(pdd, 'env', 'extravars'), 'w', encoding='utf-8') as handle:
        json.dump(variables, handle)
    with open(os.path.join(pdd, 'env', 'cmdline'), 'w', encoding='utf-8') as handle:
        handle.write(' '.join(shlex.quote(item) for item in (['--tags', tags] if tags else []) + extra))
    return [os.path.join(os.path.dirname(sys.executable), 'ansible-runner'), 'run', pdd, '-p',
            os.path.basename(playbook), '--ident', 'job']


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('-i', '--inventory', required=True)
    parser.add_argument('--run-id', required=True, help='npuops_run_id, the same for every part')
    parser.add_argument('--slices', type=int, help="K, instead of the node part template's job_slice_count")
    parser.add_argument('--workflow', default=WORKFLOW)
    parser.add_argument('--playbook-dir', default=ROOT, help='where playbooks/site.yml is (the project)')
    parser.add_argument('--log-dir', help='one log file per process (default: a temporary directory)')
    parser.add_argument('--engine', choices=['playbook', 'runner'], default='playbook',
                        help='ansible-playbook (default), or ansible-runner with a private data directory per job as AWX '
                             'lays it out')
    parser.add_argument('--start-at', help='the identifier of the workflow node to start at (the earlier ones ran)')
    parser.add_argument('--stages', help='only the workflow nodes of these stages, such as 0,1,2,3 (default: all)')
    parser.add_argument('options', nargs=argparse.REMAINDER, help='after --: more ansible-playbook options')
    args = parser.parse_args(argv)
    extra = [item for item in args.options if item != '--']
    templates, chain, _workflow_vars = load_workflow(args.workflow)
    exported = json.loads(subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i',
                                          args.inventory, '--list', '--export'], check=True, capture_output=True,
                                         text=True).stdout)
    hosts = sorted((exported.get('_meta') or {}).get('hostvars', {}))
    work = tempfile.mkdtemp(prefix='npuops-parts.')
    logs = args.log_dir or work
    os.makedirs(logs, exist_ok=True)
    write_script(os.path.join(work, 'inventory.py'), exported)
    try:
        return run_chain(args, chain, templates, exported, hosts, work, logs, extra)
    finally:
        if args.log_dir:  # the pared inventories hold the nodes' variables: not left behind when the logs go elsewhere
            shutil.rmtree(work, ignore_errors=True)
        else:
            print('logs and pared inventories in %s' % work)


def run_chain(args, chain, templates, exported, hosts, work, logs, extra):
    """Every workflow node of ``chain`` in order; the exit status of the workflow."""
    playbook_cmd = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    whole = os.path.join(work, 'inventory.py')
    started = time.monotonic()
    if args.start_at:
        names = [node['identifier'] for node in chain]
        if args.start_at not in names:
            raise SystemExit('--start-at %s: the workflow has %s' % (args.start_at, ', '.join(names)))
        chain = chain[names.index(args.start_at):]
    if args.stages:
        wanted = set('stage%s' % item.strip() for item in args.stages.split(','))
        chain = [node for node in chain if (node.get('job_tags') or '') in wanted]
    for node in chain:
        template = templates[node['unified_job_template']['name']]
        count = args.slices if args.slices and template.get('job_slice_count', 1) > 1 else template.get('job_slice_count', 1)
        tags = node.get('job_tags') or template.get('job_tags')
        # the template's part and the run id; the workflow's own extra_vars (the Controller's store path) are AWX's:
        # here the inventory or the options after -- say where the store is
        variables = dict(template.get('extra_vars') or {})
        variables['npuops_run_id'] = args.run_id
        inventories = []
        if count > 1:
            for index, part in enumerate(awx_slices(hosts, count), 1):
                path = write_script(os.path.join(work, '%s-slice%d.py' % (node['identifier'], index)),
                                    pare_inventory(exported, part))
                inventories.append((index, path))
        else:
            inventories.append((0, whole))
        procs = []
        for index, path in inventories:
            log = os.path.join(logs, '%s%s.log' % (node['identifier'], '-slice%d' % index if index else ''))
            if args.engine == 'runner':
                cmd = runner_job(os.path.join(work, 'jobs', os.path.basename(log)[:-len('.log')]), path,
                                 os.path.join(args.playbook_dir, template['playbook']), variables, tags, extra)
            else:
                cmd = [playbook_cmd, '-i', path, os.path.join(args.playbook_dir, template['playbook']),
                       '-e', json.dumps(variables)] + (['--tags', tags] if tags else []) + extra
            handle = open(log, 'w', encoding='utf-8')
            # ansible-runner starts ansible-playbook from PATH: the one beside this interpreter
            env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
            procs.append((subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, env=env), handle, log))
        failed = []
        for proc, handle, log in procs:
            proc.wait()
            handle.close()
            if proc.returncode != 0:
                failed.append((proc.returncode, log))
        print('%-14s %-26s %d process(es) %s  (%.0f s)' % (node['identifier'], template['name'], len(procs),
                                                           'failed' if failed else 'ok', time.monotonic() - started),
              flush=True)
        for code, log in failed:
            print('  rc %d, log %s' % (code, log))
            with open(log, encoding='utf-8') as handle:
                print(''.join(handle.readlines()[-15:]))
        if failed and not node.get('_always'):
            return failed[0][0]
        if failed:
            print('  the next node runs whatever this one ended with (an "always" edge): its gate judges the store')
    return 0


if __name__ == '__main__':
    sys.exit(main())
