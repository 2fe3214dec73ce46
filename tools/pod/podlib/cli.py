"""The podctl command line: argument parser and ``main()``."""

import argparse
import sys

from .commands import cmd_down, cmd_exec, cmd_status, cmd_up
from .common import DEFAULT_BASE, DEFAULT_INVENTORY, DEFAULT_PRODUCT, MAX_NODES, PRODUCTS, PodError
from .pod import DEFAULT_PREFIX

DESCRIPTION = "Bring a simulated Ascend PoD of N nodes up and down on this machine."


def build_parser():
    parser = argparse.ArgumentParser(prog="podctl", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="bring N nodes up (adds or removes nodes to match N)")
    up.add_argument("--nodes", type=int, required=True, help="number of nodes, 1..%d" % MAX_NODES)
    up.add_argument("--latency-ms", type=int, help="per-call latency of the simulated tools, in ms (node state)")
    up.add_argument("--flap-seconds", type=float, help="how long a PFC/MTU change keeps the link down, in s (node state)")
    up.add_argument("--inventory", default=DEFAULT_INVENTORY, help="inventory to write (default %(default)s); an ssh_config goes beside it")
    up.add_argument("--base", default=DEFAULT_BASE, help="working directory of the PoD (default %(default)s)")
    up.add_argument("--ssh-config", help="where to write the ssh_config for the nodes (default: beside the inventory)")
    up.add_argument("--product", choices=PRODUCTS,
                    help="product profile of every node: atlas-800t-a2 (8 x 910B3), atlas-a3 (8 NPUs x 2 dies, 16 RoCE ports), "
                    "atlas-300i-duo (4 cards x 2 x 310P3, no RoCE port) (default: the running PoD's, else %s)" % DEFAULT_PRODUCT)
    up.add_argument("--address-prefix", help="nodes listen on PREFIX.N (default %s; use another, e.g. 127.0.2, to run a second PoD)" % DEFAULT_PREFIX)
    down = sub.add_parser("down", help="stop every node and remove what up made")
    down.add_argument("--base", default=DEFAULT_BASE)
    status = sub.add_parser("status", help="table of nodes; exit 1 when a node is down")
    status.add_argument("--base", default=DEFAULT_BASE)
    exe = sub.add_parser("exec", help="run a command on a node over ssh: exec NODE -- CMD...")
    exe.add_argument("--base", default=DEFAULT_BASE)
    exe.add_argument("node")
    exe.add_argument("command", nargs=argparse.REMAINDER)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    handler = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "exec": cmd_exec}[args.cmd]
    try:
        return handler(args)
    except PodError as exc:
        print("podctl %s: error: %s" % (args.cmd, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
