#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: serving_bench
short_description: Load sweep against a running MindIE or vLLM-Ascend OpenAI-compatible endpoint (TTFT, TPOT, tokens/s)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Sends streamed requests to an OpenAI-compatible endpoint (C(/v1/completions) or C(/v1/chat/completions), as MindIE
    Service and C(vllm serve) offer them), level by level at the concurrencies of O(concurrency), and measures per
    request the time to the first token (TTFT), the time per output token after the first (TPOT) and the latency, and
    per level the output tokens per second.
  - One streamed chunk that carries text counts as one output token.
  - Returns, per level, the mean, P50 and P99 of TTFT and TPOT, P50 and P99 of the latency, the tokens per second and
    the failed requests with their errors. Fails only when no request of any level succeeded.
  - Sends load to the endpoint and changes nothing on any node; in check mode it sends nothing and says so.
  - Standard library only (C(http.client)); runs where it is called, on a node or delegated to the controller.
options:
  endpoint:
    description:
      - Base URL of the service, C(http://HOST:PORT) or C(https://HOST:PORT) (MindIE's C(ServerConfig.ipAddress) and
        C(port), for example C(http://127.0.0.1:1025)).
    type: str
    required: true
  api:
    description:
      - Which API to call, C(/v1/completions) (V(completions)) or C(/v1/chat/completions) (V(chat)).
    type: str
    choices: [completions, chat]
    default: completions
  model:
    description:
      - The served model name (MindIE's C(modelName), vLLM's C(--served-model-name) or model path).
    type: str
    required: true
  prompt:
    description:
      - The prompt of every request.
    type: str
    default: Explain what a lossless RDMA network needs, step by step.
  max_tokens:
    description:
      - Output tokens per request (1-32768).
    type: int
    default: 128
  concurrency:
    description:
      - The concurrency levels, measured in this order (each 1-1024).
    type: list
    elements: int
    default: [1, 8, 32, 128]
  requests:
    description:
      - Requests per level; V(0) sends twice the level, at least 8.
    type: int
    default: 0
  timeout:
    description:
      - Seconds one request may take (connection and each read), 1-3600.
    type: int
    default: 60
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details: Sends nothing in check mode; RV(skipped) says so.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Never changes anything; it only measures.
  platform:
    support: full
    platforms: posix
    description: Any host that reaches the endpoint, with Python 3.9 or later.
notes:
  - The figures measure the service as configured and loaded at the time; run it after stage 7 wrote the configuration
    and the service was restarted with it.
seealso:
  - module: npuops.ascend.mindie_config
"""

EXAMPLES = r"""
- name: Sweep the MindIE endpoint of the first node
  npuops.ascend.serving_bench:
    endpoint: http://127.0.0.1:1025
    model: qwen2.5-7b
    concurrency: [1, 8, 32]
    max_tokens: 256
  register: sweep

- name: Show the P99 time to first token per level
  ansible.builtin.debug:
    msg: "{{ sweep.levels | map(attribute='ttft_ms') | map(attribute='p99') | list }}"
"""

RETURN = r"""
levels:
  description: One entry per concurrency level, in the order of O(concurrency).
  returned: success and not in check mode
  type: list
  elements: dict
  contains:
    concurrency:
      description: The number of requests in flight.
      type: int
    requests:
      description: Requests sent at this level.
      type: int
    succeeded:
      description: Requests that streamed at least one token.
      type: int
    failed:
      description: Requests that failed.
      type: int
    errors:
      description: Up to five different error messages of the failed requests.
      type: list
      elements: str
    wall_s:
      description: Wall time of the level in seconds.
      type: float
    output_tokens:
      description: Output tokens of the successful requests.
      type: int
    tokens_per_s:
      description: Output tokens per second over the level's wall time.
      type: float
    ttft_ms:
      description: Time to the first token, mean, p50 and p99, in ms.
      type: dict
    tpot_ms:
      description: Time per output token after the first, mean, p50 and p99, in ms.
      type: dict
    latency_ms:
      description: Request latency, p50 and p99, in ms.
      type: dict
  sample:
    - {concurrency: 8, requests: 16, succeeded: 16, failed: 0, errors: [], wall_s: 4.2, output_tokens: 2048,
       tokens_per_s: 487.6, ttft_ms: {mean: 85.1, p50: 80.2, p99: 140.3}, tpot_ms: {mean: 31.2, p50: 30.9, p99: 35.0},
       latency_ms: {p50: 4050.1, p99: 4190.7}}
skipped:
  description: Why nothing was sent (check mode), or null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._domain.serving import SweepError, parse_endpoint, sweep  # noqa: E402


def problems(params):
    """What is wrong with the options, before anything is sent."""
    found = []
    try:
        parse_endpoint(params['endpoint'])
    except SweepError as exc:
        found.append(str(exc))
    if not 1 <= params['max_tokens'] <= 32768:
        found.append('max_tokens %d is outside 1-32768' % params['max_tokens'])
    if not params['concurrency']:
        found.append('concurrency is empty: give at least one level, e.g. [1, 8, 32, 128]')
    bad = [level for level in params['concurrency'] if not 1 <= level <= 1024]
    if bad:
        found.append('concurrency %s: each level must be 1-1024' % bad)
    if params['requests'] < 0:
        found.append('requests %d is below 0 (0 sends twice the level, at least 8)' % params['requests'])
    if not 1 <= params['timeout'] <= 3600:
        found.append('timeout %d is outside 1-3600 seconds' % params['timeout'])
    if not str(params['model'] or '').strip():
        found.append('model is empty: give the served model name')
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoint=dict(type='str', required=True),
            api=dict(type='str', choices=['completions', 'chat'], default='completions'),
            model=dict(type='str', required=True),
            prompt=dict(type='str', default='Explain what a lossless RDMA network needs, step by step.'),
            max_tokens=dict(type='int', default=128, no_log=False),
            concurrency=dict(type='list', elements='int', default=[1, 8, 32, 128]),
            requests=dict(type='int', default=0),
            timeout=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    found = problems(module.params)
    if found:
        module.fail_json(msg='serving_bench: %s; nothing was sent.' % '; '.join(found))
    if module.check_mode:
        module.exit_json(changed=False, levels=[], skipped='check mode: no request was sent to %s' % module.params['endpoint'])
    params = module.params
    levels = sweep(params['endpoint'], params['api'], params['model'], params['prompt'], params['max_tokens'],
                   params['concurrency'], params['requests'], params['timeout'])
    if not any(level['succeeded'] for level in levels):
        errors = sorted(set(error for level in levels for error in level['errors']))
        module.fail_json(msg='serving_bench: no request to %s succeeded (%s): check that the service runs, listens there and '
                             'serves the model %r' % (params['endpoint'], '; '.join(errors[:3]) or 'no answer',
                                                      params['model']), levels=levels, skipped=None)
    module.exit_json(changed=False, levels=levels, skipped=None)


if __name__ == '__main__':
    main()
