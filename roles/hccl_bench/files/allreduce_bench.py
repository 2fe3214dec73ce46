# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AllReduce bandwidth of the NPUs of one node with torch_npu and HCCL, for the hccl_bench module (mode torch).

Run under torchrun: torchrun --nproc_per_node 8 allreduce_bench.py --max-bytes 1073741824 [--trials 20]
Rank 0 prints, in the common text of such scripts:

    The average bandwidth of all_reduce with a 1.073741824GB payload (20 trials, 8 ranks):
     algbw: 78.380 GBps (627.0 Gbps)
     busbw: 137.165 GBps (1097.3 Gbps)
"""

import argparse
import os
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--max-bytes', type=int, default=1 << 30)
    parser.add_argument('--trials', type=int, default=20)
    parser.add_argument('--warmup', type=int, default=5)
    args = parser.parse_args()

    import torch
    import torch.distributed as dist
    import torch_npu  # noqa: F401  (registers the npu device and the hccl backend)

    local_rank = int(os.environ.get('LOCAL_RANK', '0'))
    torch.npu.set_device(local_rank)
    dist.init_process_group(backend='hccl')
    ranks = dist.get_world_size()
    elements = args.max_bytes // 4
    tensor = torch.ones(elements, dtype=torch.float32, device='npu')
    for _step in range(args.warmup):
        dist.all_reduce(tensor)
    torch.npu.synchronize()
    started = time.perf_counter()
    for _step in range(args.trials):
        dist.all_reduce(tensor)
    torch.npu.synchronize()
    seconds = (time.perf_counter() - started) / args.trials
    algbw = elements * 4 / seconds
    busbw = algbw * 2 * (ranks - 1) / ranks
    if dist.get_rank() == 0:
        text = ('The average bandwidth of all_reduce with a %sGB payload (%d trials, %d ranks):\n'
                ' algbw: %.3f GBps (%.1f Gbps)\n busbw: %.3f GBps (%.1f Gbps)\n')
        print(text % (elements * 4 / 1e9, args.trials, ranks, algbw / 1e9, algbw * 8 / 1e9, busbw / 1e9, busbw * 8 / 1e9))
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
