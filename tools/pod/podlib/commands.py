"""The podctl commands: up, down, status, exec."""

import concurrent.futures
import contextlib
import os
import shlex
import shutil
import sys
import time

from .common import DEFAULT_PRODUCT, DIR_MOUNTS, MAX_NODES, REPO, SIM_GROUP_VARS, PodError, PodUsageError, log
from .host import check_host
from .inventory import intent_path, remove_generated, remove_intent, user_intent, write_outputs
from .node import apply_settings, close_mux, ensure_nodes, kill_nodes, make_keys, remove_nodes, tcp_accepts
from .pod import DEFAULT_PREFIX, Pod, node_index, node_names
from .procs import host_namespaces, node_pid_ok
from .registry import register_pod, unregister_pod


def cmd_up(args):
    check_host()
    if not 1 <= args.nodes <= MAX_NODES:
        raise PodError("--nodes must be 1..%d (one loopback address 127.0.1.N per node)" % MAX_NODES)
    pod = Pod(args.base)
    with pod.lock():
        try:
            return _up(args, pod)
        except PodUsageError:
            raise
        except PodError as exc:
            if os.path.exists(pod.record_path):
                raise PodError("%s\n(a partial PoD may be left: run 'podctl down --base %s')" % (exc, pod.base)) from exc
            raise


def _up(args, pod):
    t0 = time.monotonic()
    inventory = os.path.abspath(args.inventory)
    os.makedirs(pod.base, exist_ok=True)
    record = pod.load() or {"nodes": {}, "settings": {}}
    prefix = args.address_prefix or record.get("address_prefix") or DEFAULT_PREFIX
    if record["nodes"] and record.get("address_prefix", DEFAULT_PREFIX) != prefix:
        raise PodUsageError("this PoD runs on %s.N; run 'podctl down --base %s' before changing the address prefix" % (
            record.get("address_prefix", DEFAULT_PREFIX), pod.base))
    pod = pod.with_prefix(prefix)
    record["address_prefix"] = prefix
    product = getattr(args, "product", None) or record.get("product") or DEFAULT_PRODUCT
    if record["nodes"] and record.get("product", DEFAULT_PRODUCT) != product:
        raise PodUsageError("this PoD runs %s nodes; run 'podctl down --base %s' before changing the product" % (
            record.get("product", DEFAULT_PRODUCT), pod.base))
    record["product"] = product
    old_outputs = (record.get("inventory"), record.get("inventory_ssh_config"))
    old_intent = record.get("inventory_intent")
    record["inventory"] = inventory
    record["inventory_ssh_config"] = os.path.abspath(args.ssh_config) if args.ssh_config else os.path.join(os.path.dirname(inventory), "ssh_config")
    settings = {"latency_ms": args.latency_ms, "flap_seconds": args.flap_seconds}
    wanted = node_names(args.nodes)
    if any(len(name) != len(wanted[0]) for name in record["nodes"]):
        raise PodUsageError("node names change width between %d and %d nodes; run 'podctl down' first" % (len(record["nodes"]), args.nodes))

    extra = sorted((n for n in record["nodes"] if n not in wanted), key=node_index)
    if extra:
        remove_nodes(pod, record, extra)
        pod.save(record)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    make_keys(pod)
    pod.save(record)  # before registering: another PoD's down treats a base without pod.json as gone
    register_pod(pod.base, [target for target, _source in DIR_MOUNTS])
    started = ensure_nodes(pod, record, wanted, settings, product)
    existing = [n for n in wanted if n not in started]
    changed = {k: v for k, v in settings.items() if v is not None and record["settings"].get(k) != v}
    if changed and existing:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: apply_settings(pod.state_file(n), changed), existing))
    record["settings"].update({k: v for k, v in settings.items() if v is not None})
    pod.save(record)
    for old in old_outputs:
        if old and old not in (record["inventory"], record["inventory_ssh_config"]):
            remove_generated(old)
    intent = intent_path(record["inventory"])
    kept = user_intent(intent) if intent else []
    if old_intent and old_intent != intent:
        remove_intent(old_intent)
    outputs_missing = not all(os.path.exists(p) for p in (pod.ssh_config, record["inventory"], record["inventory_ssh_config"]))
    outputs_missing = outputs_missing or bool(intent and not kept and not os.path.exists(intent))
    if started or extra or changed or outputs_missing or old_outputs != (record["inventory"], record["inventory_ssh_config"]):
        write_outputs(pod, record)
        pod.save(record)
        if kept:
            log("intent: keeping the group variables beside the inventory (%s); the simulated PoD's own are in %s" % (
                ", ".join(kept), os.path.relpath(SIM_GROUP_VARS, REPO)))
    elapsed = time.monotonic() - t0
    if not started and not extra and not changed:
        log("already up: %d nodes at %s (inventory %s)" % (len(wanted), pod.base, record["inventory"]))
        return 0
    parts = []
    if started:
        parts.append("started %d (%s)" % (len(started), span(started)))
    if extra:
        parts.append("removed %d (%s)" % (len(extra), span(extra)))
    if changed:
        parts.append("set %s" % ", ".join("%s=%s" % kv for kv in sorted(changed.items())))
    log("up: %d nodes at %s: %s in %.2fs" % (len(wanted), pod.base, "; ".join(parts), elapsed))
    log("inventory: %s" % record["inventory"])
    log("ssh:       ssh -F %s %s" % (pod.ssh_config, wanted[0]))
    return 0


def span(names):
    names = sorted(names, key=node_index)
    return names[0] if len(names) == 1 else "%s..%s" % (names[0], names[-1])


def cmd_down(args):
    if os.geteuid() != 0:
        raise PodError("podctl needs root to stop the PoD's namespaces")
    pod = Pod(args.base)
    if not os.path.isdir(pod.base):
        log("already down: nothing at %s" % pod.base)
        return 0
    with pod.lock():
        code = _down(pod)
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(pod.base, ".lock"))
        os.rmdir(pod.base)
    return code


def _down(pod):
    t0 = time.monotonic()
    record = pod.load()
    if record is None:
        if os.path.isdir(pod.nodes_dir):
            raise PodError("%s has node directories but no pod.json; stop its processes and remove it by hand" % pod.base)
        log("already down: nothing at %s" % pod.base)
        return 0
    pod = pod.with_prefix(record.get("address_prefix", DEFAULT_PREFIX))
    names = sorted(record["nodes"], key=node_index)
    close_mux(pod, names)
    unverified = kill_nodes(pod, record["nodes"])
    shutil.rmtree(pod.nodes_dir, ignore_errors=True)
    for path in (record.get("inventory"), record.get("inventory_ssh_config"), pod.ssh_config):
        remove_generated(path)
    remove_intent(record.get("inventory_intent"))
    for path in (pod.keys_dir, pod.mux_dir):
        shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pod.record_path)
    removed = unregister_pod(pod.base)
    msg = "down: %d nodes stopped, %s removed in %.2fs" % (len(names), pod.base, time.monotonic() - t0)
    if removed:
        msg += "; removed mount points %s" % ", ".join(removed)
    log(msg)
    if unverified:
        log("note: no running sshd found for %s (already stopped)" % ", ".join(unverified))
    return 0


def cmd_status(args):
    pod = Pod(args.base)
    record = pod.load()
    if record is None:
        log("down: no PoD at %s" % pod.base)
        return 1
    pod = pod.with_prefix(record.get("address_prefix", DEFAULT_PREFIX))
    host_ns = host_namespaces()
    rows = [("NODE", "ADDRESS", "PID", "ALIVE", "SSH")]
    dead = 0
    for name in sorted(record["nodes"], key=node_index):
        info = record["nodes"][name]
        alive = node_pid_ok(pod, name, info, host_ns)
        listening = alive and tcp_accepts(pod.node_address(node_index(name)))
        dead += not listening
        rows.append((name, pod.node_address(node_index(name)), str(info.get("pid", "-")), "yes" if alive else "no", "yes" if listening else "no"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        log("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    log("base %s, inventory %s, %d/%d nodes up" % (pod.base, record.get("inventory"), len(rows) - 1 - dead, len(rows) - 1))
    return 1 if dead else 0


def cmd_exec(args):
    pod = Pod(args.base)
    record = pod.load()
    if record is None:
        raise PodError("no PoD at %s; run 'podctl up' first" % pod.base)
    if args.node not in record["nodes"]:
        raise PodError("no node %s (have %s)" % (args.node, span(record["nodes"])))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise PodError("usage: podctl exec NODE -- COMMAND [ARG...]")
    argv = ["ssh", "-F", pod.ssh_config, args.node, "--", shlex.join(command)]
    sys.stdout.flush()
    os.execvp(argv[0], argv)
    return 127
