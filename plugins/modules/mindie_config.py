#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mindie_config
short_description: Merge validated settings into the config.json of MindIE Service
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Sets MindIE Service settings, given by MindIE's own key names, at their nested place in its C(config.json), and keeps
    every other key and value of the file as it is (also keys this module does not know, and the key order).
  - Where each key lives - C(ServerConfig), C(BackendConfig), C(BackendConfig.ModelDeployConfig),
    C(BackendConfig.ModelDeployConfig.ModelConfig[model_index]), C(BackendConfig.ScheduleConfig), C(LogConfig) - comes
    from one table in the collection, written from the default C(config.json) that MindIE-LLM ships
    (C(src/server/conf/config.json)) and the ranges of its parameter guide (C(service_parameter_configuration.md)).
  - Before anything is written, the settings and then the whole merged file (the settings plus what the file already
    holds) are checked against MindIE's own rules - the type and range of each known key;
    C(maxPrefillTokens >= maxInputTokenLen) (unless C(templateType) is C(Mix)); C(maxPreemptCount <= maxBatchSize);
    C(maxPrefillBatchSize <= maxBatchSize); C(cpuMemSize) may be 0 only when C(maxPreemptCount) is 0; C(npuMemSize) is
    -1 or more than 0; C(npuDeviceIds) has one list per model instance (C(modelInstanceNumber)), each exactly
    C(worldSize) long (not checked when C(multiNodesInferEnabled), where the rank table decides); C(port) differs from
    C(multiNodesInferPort); C(ipAddress) 0.0.0.0 only with C(allowAllZeroIpListening); one model with C(templateType)
    Standard. Any problem fails the task with every problem listed in RV(problems), and nothing is written.
  - The file must exist (a missing file means MindIE is not installed there), be a regular file of 1 byte to 10 MiB
    (what MindIE reads), and be valid JSON.
  - A symbolic link at O(path) is refused, naming the link and its target, and nothing is written - the module never
    reads or writes through a link (the target would be copied into a file the service user owns, and the link
    replaced). The file is opened with C(O_NOFOLLOW) and checked on the opened descriptor, so a link put in place after
    the check is refused as well. Links among the directories above it (such as C(latest) of a run-package install)
    are followed as usual.
  - A changed file is written to a temporary file in the same directory - owner, group and mode set on it there - and
    renamed over the old one in one step, with the indent style of the old file (4 spaces when it cannot be told); it is
    then read back and every setting checked. When the values are already there nothing is written (a different
    formatting alone is no change); owner, group and mode of an unchanged file are set on the opened file.
  - O(owner) and O(group) must exist on the node; otherwise the task fails before anything is written.
  - A warning names a directory of the file that every user may write (any local user could replace the file).
    A directory the service user or its group may write is MindIE's usual layout and is not reported.
options:
  path:
    description:
      - The C(config.json) of MindIE Service. A run-package install keeps it in
        C(<install dir>/latest/mindie-service/conf/config.json); the environment variable C(MIES_CONFIG_JSON_PATH) can
        point MindIE elsewhere.
    type: path
    required: true
  settings:
    description:
      - 'MindIE key names and their values, for example C({maxBatchSize: 64, maxPrefillTokens: 16384, npuMemSize: 40,
        worldSize: 8, npuDeviceIds: [[0,1,2,3,4,5,6,7]], modelName: qwen, modelWeightPath: /data/qwen, httpsEnabled: false}).'
      - 'ServerConfig keys: C(ipAddress), C(managementIpAddress), C(port), C(managementPort), C(metricsPort),
        C(interCommPort) (1024-65535), C(allowAllZeroIpListening), C(maxLinkNum) (1-4096), C(httpsEnabled),
        C(fullTextEnabled), C(inferMode), C(interCommTLSEnabled), C(openAiSupport), C(tokenTimeout), C(e2eTimeout),
        C(distDPServerEnabled), the C(tls*), C(managementTls*), C(metricsTls*) and C(interComm*) certificate paths and
        lists, and C(npuUsageThreshold) (in C(ServerConfig.HealthCheckConfig)).'
      - 'BackendConfig keys: C(backendName), C(modelInstanceNumber) (1-10), C(npuDeviceIds) (list of lists of NPU ids),
        C(tokenizerProcessNumber) (1-32), C(multiNodesInferEnabled), C(multiNodesInferPort), C(interNodeTLSEnabled) and
        the C(interNodeTls*) paths and lists.'
      - 'BackendConfig.ModelDeployConfig keys: C(maxSeqLen), C(maxInputTokenLen) (1-4194304), C(truncation) (-1, 0, 1,
        true, false).'
      - 'ModelConfig[model_index] keys: C(modelInstanceType), C(modelName), C(modelWeightPath) (absolute),
        C(worldSize) (1 or more), C(cpuMemSize) (GB), C(npuMemSize) (GB per NPU, -1 for automatic), C(backendType)
        (atb, ms, torch), C(trustRemoteCode), C(async_scheduler_wait_time), C(kv_trans_timeout), C(kv_link_timeout).'
      - 'BackendConfig.ScheduleConfig keys: C(templateType) (Standard, Mix), C(templateName) (Standard_LLM),
        C(cacheBlockSize) (1-128), C(maxPrefillBatchSize), C(maxPrefillTokens) (1-4194304), C(prefillTimeMsPerReq) and
        C(decodeTimeMsPerReq) (0-1000), C(prefillPolicyType) and C(decodePolicyType) (0), C(maxBatchSize) (1-819200),
        C(maxIterTimes), C(maxPreemptCount), C(supportSelectBatch), C(maxQueueDelayMicroseconds) (500-1000000),
        C(maxFirstTokenWaitTime) (0-3600000).'
      - 'LogConfig keys: C(dynamicLogLevel), C(dynamicLogLevelValidHours) (1-168), C(dynamicLogLevelValidTime); top
        level: C(EnableDynamicAdjustTimeoutConfig).'
      - Values must have the JSON type MindIE expects (an integer, not the string C("64")). A key not in this list is
        refused with the closest known name.
    type: dict
    default: {}
  model_index:
    description:
      - Which entry of C(BackendConfig.ModelDeployConfig.ModelConfig) the model keys go to. Must exist in the file.
    type: int
    default: 0
  owner:
    description:
      - Owner of the file (a user name or a uid). MindIE refuses a config.json that is not owned by the user the service
        runs as (root is not checked). Left as it is when not given.
    type: str
  group:
    description: Group of the file (a group name or a gid). Left as it is when not given.
    type: str
  mode:
    description:
      - Mode of the file, octal (V('0640')). MindIE refuses a config.json with any permission beyond 0640, so a wider
        mode (V('0644'), V('0660')) is refused here before anything is written. Also applied when the content is unchanged.
    type: raw
    default: '0640'
  backup:
    description:
      - Keep a copy of the old file beside it (C(config.json.<pid>.<timestamp>~)) before a change; its path is in
        RV(backup_file). The copy is created as a new file (never through a link or over an existing file), holds the
        bytes that were read, keeps the old owner and group, and has the old mode limited to 0640.
    type: bool
    default: false
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details: Reads and validates the file and computes the changes and the diff; nothing is written.
  diff_mode:
    support: full
    details: The before and after JSON text of the file (and owner, group, mode when they change).
  idempotent:
    support: full
    details: When the file already holds the values and the mode, nothing is written and the task reports no change.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with MindIE Service installed (its C(config.json)); writing it may need root.
notes:
  - C(npuDeviceIds) are logical device ids; with C(ASCEND_RT_VISIBLE_DEVICES) set they are renumbered from 0.
  - The module does not restart MindIE Service; it reads C(config.json) when it starts.
  - C(npuMemSize -1), MindIE's default and the value its parameter guide recommends, lets MindIE size the KV cache
    itself at each start from a warm-up with the largest batch and C(NPU_MEMORY_FRACTION); a fixed number skips that
    profiling (MindIE then warns that it may run out of memory). A fixed value computed from the free HBM is only right
    when read while no model is loaded on the NPUs - see P(npuops.ascend.npu_mem_size_auto#filter).
seealso:
  - module: npuops.ascend.npu_info
  - plugin: npuops.ascend.npu_mem_size
    plugin_type: filter
  - plugin: npuops.ascend.npu_mem_size_auto
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Size the scheduler and the KV cache of MindIE Service on 8 NPUs
  npuops.ascend.mindie_config:
    path: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json
    settings:
      maxBatchSize: 64
      maxPrefillTokens: 16384
      maxInputTokenLen: 8192
      maxSeqLen: 16384
      npuMemSize: 40
      worldSize: 8
      npuDeviceIds: [[0, 1, 2, 3, 4, 5, 6, 7]]
      modelName: qwen2.5-72b
      modelWeightPath: /data/weights/qwen2.5-72b
    owner: mindie
    group: mindie
    backup: true

- name: Compute npuMemSize from the free HBM of the NPUs
  npuops.ascend.npu_info:
    gather_subset: [usages]
  register: npus

- name: Leave 20 GB of weights and 4 GB of workspace per NPU, then 80 % of the rest for the KV cache
  npuops.ascend.mindie_config:
    path: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json
    settings:
      npuMemSize: "{{ npus | npuops.ascend.npu_mem_size(20, reserve_gb=4) }}"
"""

RETURN = r"""
path:
  description: The file.
  returned: success
  type: str
  sample: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json
changes:
  description: The settings whose value differed, with their path in the file and the value before and after.
  returned: success
  type: list
  elements: dict
  sample: [{key: maxBatchSize, path: BackendConfig.ScheduleConfig.maxBatchSize, before: 200, after: 64}]
settings_before:
  description:
    - The value of every setting of the module's table that the file held before the task (settings it does not hold
      are left out). A check-mode run with no settings reads the file this way.
  returned: success
  type: dict
  sample: {maxBatchSize: 200, npuMemSize: -1, worldSize: 4}
settings_after:
  description: The value of every requested setting in the file after the task (predicted in check mode).
  returned: success
  type: dict
  sample: {maxBatchSize: 64, npuMemSize: 40}
backup_file:
  description: The copy of the old file, or null when none was written.
  returned: success
  type: str
  sample: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json.12345.2026-01-01@12:00:00~
problems:
  description: Every violated rule, one sentence each; empty on success.
  returned: always
  type: list
  elements: str
  sample: ["maxPrefillTokens 4096 is less than maxInputTokenLen 8192: MindIE needs maxPrefillTokens >= maxInputTokenLen ..."]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._domain.mindie import MindieConfig  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure, host_name  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            settings=dict(type='dict', default={}),
            model_index=dict(type='int', default=0),
            owner=dict(type='str'),
            group=dict(type='str'),
            mode=dict(type='raw', default='0640'),
            backup=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    try:
        result = MindieConfig(module, host_name()).run()
    except ModuleFailure as exc:
        out = exc.result()
        out.setdefault('problems', [])
        out['path'] = module.params['path']
        module.fail_json(**out)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
