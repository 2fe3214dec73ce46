#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_serving.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_serving
short_description: Stage 7 - the serving engine of a node (MindIE config.json or the vLLM-Ascend launch), checked first on every node
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The parts of stage 7 (the C(mindie_config) role runs them); the gate's verdict (M(npuops.ascend.stage_gate))
    follows.
  - O(step=check) (on every node, one task) checks the node's stage 7 variables (O(values)) from the inventory alone
    and returns their C(problems). With O(decide) (npuMemSize C(auto) in a run), it also runs
    M(npuops.ascend.npu_info) (C(gather_subset) V(usages), V(processes)) and reads the npuMemSize config.json holds
    (M(npuops.ascend.mindie_config) in check mode, no diff), decides npuMemSize - computed from the free HBM only while
    no process runs on the instance's NPUs, the value of the file kept while one does, else a problem - and writes
    that decision to the node's record of stage 7 (C(data.npu_mem)). It writes the node's check record
    (C(<run_dir>/nodes/<node>/check7.json), with its problems and C(data.npu_mem)).
  - O(step=check_pod) (once, C(run_once)) reads the check records of the O(nodes) from the run's store and fails,
    before anything is written on any node, when a node's variables have a problem, its npuMemSize could not be
    decided, or it has no check record of this run (a record of another run id is never used); every problem is named
    with its node.
  - O(step=node) (on every node, one task) does the node's work. With engine C(mindie), merges the settings (and the
    npuMemSize decided by O(step=check), or the number given) into config.json with M(npuops.ascend.mindie_config),
    reads the file back and turns the result into findings (a rule of MindIE that fails is a finding, not a failed
    task). With engine C(vllm), writes the directory, C(vllm-<service>.env) (0640, backup),
    C(vllm-<service>.secrets) (0640, no backup, only with secrets; written with no_log and no diff, only the names
    of the secrets are returned in C(secrets_msg)) or removes it, and C(vllm-<service>.sh) (0750, backup), with
    C(ansible.builtin.file) and the C(ansible.builtin.copy) action, so that check mode, the diff and the backups are
    theirs. When O(bench_endpoint) is set and the engine is not C(none), sweeps the running service with
    M(npuops.ascend.serving_bench); a sweep that reaches nothing is a warning. Then writes the node's record of stage 7
    (its findings, and its serving configuration in C(data), which the report of the PoD reads) and, with O(report),
    C(<run_dir>/stage7-mindie_config/<node>.json).
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [check, check_pod, node]
  run_dir:
    description:
      - The run's directory on the controller (C(<report dir>/<run id>)), created when missing; the stage roles pass
        C(gate_run_dir). Required.
    type: path
  run_id:
    description:
      - The id of the run, written into every record; 1-128 letters, digits, C(.), C(_) or C(-), starting with a letter
        or digit; the stage roles pass C(gate_run_id). Required.
    type: str
  values:
    description:
      - With O(step=check) and O(step=node), the node's stage 7 variables as the role's C(mindie_config_values) holds
        them - C(engine), C(service), C(settings), C(npu_mem_size), C(weights_gb), C(mode), C(vllm_model),
        C(vllm_args), C(vllm_env), C(env_path), C(secret_env_path).
      - The API key and the variables named like a secret are only ever written to the secrets file.
    type: dict
    default: {}
  decide:
    description: With O(step=check), decide npuMemSize C(auto) on the node.
    type: bool
    default: false
  nodes:
    description: With O(step=check_pod), the nodes whose check records are read (the role passes C(ansible_play_hosts)).
    type: list
    elements: str
    default: []
  path:
    description: MindIE's config.json on the node.
    type: str
  model_index:
    description: The C(ModelConfig) entry the model keys go to.
    type: int
    default: 0
  reserve_gb:
    description: With O(step=check), GB per NPU kept for activations, workspace and the HCCL buffers (npuMemSize auto).
    type: raw
    default: 4
  fraction:
    description: With O(step=check), the share of the rest the KV cache may use (npuMemSize auto).
    type: raw
    default: 0.8
  timeout:
    description: With O(step=check), the timeout of each npu-smi call of npuMemSize auto, seconds.
    type: int
    default: 60
  npu_mem:
    description: With O(step=node), the npuMemSize decision of O(step=check) (its C(npu_mem)); needed with npuMemSize C(auto).
    type: dict
  owner:
    description: With O(step=node), the owner of config.json; unset keeps it.
    type: str
  group:
    description: With O(step=node), the group of config.json; unset keeps it.
    type: str
  backup:
    description: With O(step=node), keep a copy of a changed config.json beside it.
    type: bool
    default: true
  vllm_dir:
    description: With O(step=node), the directory of the vLLM launch files.
    type: str
    default: /etc/npuops
  vllm_owner:
    description: With O(step=node), the owner of the vLLM launch files.
    type: str
    default: root
  vllm_group:
    description: With O(step=node), the group of the vLLM launch files.
    type: str
    default: root
  bench_endpoint:
    description: With O(step=node), the URL of the running service to sweep; unset, no sweep.
    type: str
  bench_api:
    description: With O(step=node), the OpenAI-compatible API the sweep calls.
    type: str
    choices: [completions, chat]
    default: completions
  bench_model:
    description: With O(step=node), the served model name; unset takes C(modelName) of the settings.
    type: str
  bench_concurrency:
    description: With O(step=node), the concurrency levels of the sweep, in order.
    type: list
    elements: int
    default: [1, 8, 32, 128]
  bench_max_tokens:
    description: With O(step=node), output tokens per request.
    type: int
    default: 128
  bench_requests:
    description: With O(step=node), requests per level; 0 sends twice the level, at least 8.
    type: int
    default: 0
  bench_timeout:
    description: With O(step=node), seconds one request may take.
    type: int
    default: 60
  bench_p99_p50_max:
    description: With O(step=node), the largest P99 / P50 latency at a level of the sweep (the method's 2.0).
    type: float
    default: 2.0
  bench_knee_gain_pct:
    description:
      - With O(step=node), the gain of output tokens/s per step of concurrency, percent, below which throughput is flat
        (the knee of the sweep); also the band within which a level below the best lower one is not a fall.
    type: float
    default: 10.0
  bench_p99_severity:
    description: With O(step=node), the severity of a level whose P99 latency is above O(bench_p99_p50_max) x P50.
    type: str
    choices: [fail, warn]
    default: warn
  bench_drop_severity:
    description: With O(step=node), the severity of output throughput that falls as concurrency rises.
    type: str
    choices: [fail, warn]
    default: fail
  report:
    description: With O(step=node), write C(<run_dir>/stage7-mindie_config/<node>.json).
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
attributes:
  check_mode:
    support: full
    details:
      - Nothing is written on the node; the reads run, and the records and the report are written.
  diff_mode:
    support: full
    details:
      - The diffs of config.json, the launch directory, the env file and the launch script; never one of the secrets file.
  idempotent:
    support: full
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the records and the report are written on the controller.
seealso:
  - module: npuops.ascend.mindie_config
  - module: npuops.ascend.npu_info
  - module: npuops.ascend.serving_bench
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The stage role passes the run's directory and id (gate_run_dir, gate_run_id) and its variables; here they are
# written out.
- name: Check the node's stage 7 variables and decide npuMemSize auto
  npuops.ascend.stage_serving:
    step: check
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    values:
      engine: mindie
      service: mindie
      settings: {maxBatchSize: 64}
      npu_mem_size: auto
      weights_gb: 10
      mode: "0640"
    decide: true
    path: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json
  register: serving_checked

- name: Stop on every node when any node has a problem (read from the check records)
  npuops.ascend.stage_serving:
    step: check_pod
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    nodes: "{{ ansible_play_hosts }}"
  run_once: true

- name: Write config.json, read it back and record the node
  npuops.ascend.stage_serving:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    values:
      engine: mindie
      service: mindie
      settings: {maxBatchSize: 64}
      npu_mem_size: auto
      weights_gb: 10
      mode: "0640"
    npu_mem: "{{ serving_checked.npu_mem }}"
    path: /usr/local/Ascend/mindie/latest/mindie-service/conf/config.json
"""

RETURN = r"""
problems:
  description: With O(step=check), the problems of the node's stage 7 variables (sentences).
  returned: step is check
  type: list
  elements: str
npu_mem:
  description:
    - With O(step=check), the npuMemSize decision, C({npuMemSize, source, busy, msg, problem}) (C(source) is
      V(computed) or V(kept)); null when O(decide) is false or the variables have a problem.
  returned: step is check
  type: dict
host:
  description: With O(step=check), the node.
  returned: step is check
  type: str
check_record:
  description: With O(step=check), the check record written (C(<run_dir>/nodes/<node>/check7.json)).
  returned: step is check
  type: str
findings:
  description: With O(step=node), the node's findings (the settings config.json does not hold, MindIE's rules that fail, a sweep that reached nothing).
  returned: step is node
  type: list
  elements: dict
entry:
  description: With O(step=node), the node's serving configuration (the content of its JSON report and the C(data) of its record).
  returned: step is node
  type: dict
secrets_msg:
  description: With O(step=node), what became of the secrets file, with the names of the secrets and never a value; null without secrets.
  returned: step is node
  type: str
  sample: "/etc/npuops/vllm-qwen.secrets was written: HF_TOKEN=<redacted>, VLLM_API_KEY=<redacted> (the values are never shown)"
mindie_config:
  description: With O(step=node) and engine C(mindie), the result of M(npuops.ascend.mindie_config) (without its diff).
  returned: step is node and the engine is mindie
  type: dict
vllm_launch:
  description: With O(step=node) and engine C(vllm), the launch (C(argv), C(env_text), C(script_text), C(secret_names), C(env_redacted)); no secret value.
  returned: step is node and the engine is vllm
  type: dict
record:
  description: The node's record of stage 7 written (O(step=node), and O(step=check) with O(decide)).
  returned: when a record is written
  type: dict
path:
  description: With O(step=node), the record's path.
  returned: step is node
  type: str
report:
  description: With O(step=node) and O(report), the JSON report written.
  returned: step is node and report is true
  type: str
"""
