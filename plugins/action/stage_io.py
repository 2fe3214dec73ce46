# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_io: the part of stage 8 (the data pipeline and IO) on each node.

``step: node`` runs io_info on the node (/dev/shm, vmstat and iostat sampled together, the optional fio read), reads
the NUMA layout with numa_info unless stage 6 read it in this run, works out the DataLoader advice, checks the
measurement against the limits, and writes the node's record of stage 8 and, when asked, its JSON report - in one
task. The decisions are in plugins/plugin_utils/dataloader.py, the store in plugins/plugin_utils/store.py. The PoD's
report and the verdict stay run_once tasks that read the records.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.npuops.ascend.plugins.action.stage_bench import shown, write_node_report
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, dataloader, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'io_check'
STAGE = 8
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    seconds=dict(type='int', default=5),
    shm_path=dict(type='str', default='/dev/shm'),
    fio_file=dict(type='str'),
    fio_size_mb=dict(type='int', default=8192),
    fio_runtime=dict(type='int', default=30),
    fio_numjobs=dict(type='int', default=4),
    fio_iodepth=dict(type='int', default=16),
    fio_ioengine=dict(type='str', default='libaio', choices=['libaio', 'io_uring', 'psync', 'sync', 'posixaio']),
    fio_rw=dict(type='str', default='read', choices=['read', 'randread', 'write', 'randwrite']),
    fio_block_size=dict(type='str', default='1M'),
    timeout=dict(type='int', default=60),
    # the limits as the role's variables give them: their text is in the messages ("at least 1 GB", not "1.0 GB")
    shm_min_gb=dict(type='raw', default=1),
    shm_max_used_pct=dict(type='raw', default=90),
    iowait_max_pct=dict(type='raw', default=5),
    wa_max_pct=dict(type='raw', default=2),
    fio_min_mb_s=dict(type='raw', default=0),
    fio_min_iops=dict(type='raw', default=0),
    fio_max_lat_ms=dict(type='raw', default=0),
    disk_util_max_pct=dict(type='raw', default=95),
    disk_await_max_ms=dict(type='raw', default=20),
    numa=dict(type='dict'),
    npus_per_node=dict(type='int', default=8),
    dataloader_workers=dict(type='list', elements='int', default=list(dataloader.WORKERS)),
    dataloader_reserved_cpus=dict(type='int', default=dataloader.RESERVED),
    report=dict(type='bool', default=True),
)
IO_OPTIONS = ('seconds', 'shm_path', 'fio_file', 'fio_size_mb', 'fio_runtime', 'fio_numjobs', 'fio_iodepth', 'fio_ioengine',
              'fio_rw', 'fio_block_size', 'timeout')
LIMITS = ('shm_min_gb', 'shm_max_used_pct', 'iowait_max_pct', 'wa_max_pct', 'fio_min_mb_s', 'fio_min_iops', 'fio_max_lat_ms',
          'disk_util_max_pct', 'disk_await_max_ms')


class ActionModule(StageAction):
    """Stage 8 on a node: the measurement, the DataLoader advice, the findings, the record and the report in one task."""

    NAME = 'stage_io'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        measured = self.run_module('io_info', dict((name, args[name]) for name in IO_OPTIONS if args[name] is not None),
                                   task_vars)
        io = bench.kept_result(measured)
        out = dict(changed=bool(io.get('changed')), io=io, **shown(measured))
        # the layout stage 6 read in this run, else read here (read-only, also in check mode); without it the advice
        # counts the CPUs of the node, and says so
        numa = args['numa']
        if numa is None or 'nodes' not in numa:
            read = self.run_module('numa_info', {'timeout': args['timeout']}, task_vars)
            numa = bench.kept_result(read)
            for key, values in shown(read).items():
                out[key] = out.get(key, []) + values
            out.update(numa=numa, changed=out['changed'] or bool(numa.get('changed')))
        try:
            advice = dataloader.dataloader_advice(numa, args['npus_per_node'], cpus=io.get('cpus'),
                                                  shm_mb=dataloader.shm_for_advice(io),
                                                  reserved=args['dataloader_reserved_cpus'],
                                                  workers=args['dataloader_workers'])
            findings = dataloader.io_findings(io, node, **dict((name, args[name]) for name in LIMITS))
        except (AnsibleFilterError, TypeError, ValueError) as exc:
            raise AnsibleActionFail('stage_io: %s' % to_native(exc)) from exc
        record = store.make_record(run_id, node, STAGE, ROLE, findings, check_mode=self.check_mode,
                                   data=dataloader.io_record_data(io, advice))
        path = store.write_record(args['run_dir'], record)
        if args['report']:
            out['report'] = write_node_report(
                os.path.join(args['run_dir'], 'stage8-io_check'), '%s.json' % node,
                dataloader.io_report(io, advice, findings, node, run_id, self.check_mode, measured.get('warnings')))
        out.update(dataloader=advice, findings=findings, record=record, path=path,
                   msg='recorded stage 8 (io_check) of %s: %s' % (node, record['status']))
        return out
