"""The node's ``/etc/hccn.conf``: the NPU port settings the driver keeps across a reboot.

On an Ascend node ``hccn_tool -i N -ip -s address X netmask Y`` (and ``-gateway -s``, ``-netdetect -s``) persists
the setting to ``/etc/hccn.conf``, one ``key_N=value`` a line: ``address_N``, ``netmask_N``, ``netdetect_N``,
``gateway_N`` and ``send_arp_status_N`` (tests/fixtures/captures/hccn_tool_-gateway_-g.txt, the note on the related
file; hccn_tool_set_and_errors.txt, the ``-ip -s`` line). When the driver loads at boot it sets those values again.
MTU, PFC, DSCP -> TC and TLS have no key there: after a reboot they are back at the driver's defaults.

The state keeps what the file holds per port, ``net.persisted`` ({"address", "netmask", "netdetect", "gateway"},
a key absent when nothing is persisted for it); the file ``hccn.conf`` beside the state file is written from it,
atomically (temporary file + rename, mode 0644), whenever the simulator changes it: ``npu-sim init``, a successful
``-ip -s``, ``-gateway -s`` or ``-netdetect -s``, and ``npu-sim state set npus...``. ``npu-sim reboot`` reads the
file back (an edit of the file by hand counts, as on a real node). The simulator writes no ``send_arp_status_N``
(it keeps no such value); reading ignores keys it does not know. A node without RoCE ports gets no file.
"""

import os

FILE_NAME = "hccn.conf"
# the keys of hccn.conf -> the setting of the port (``npus[].net``) each one holds
KEYS = (("address", "ip"), ("netmask", "netmask"), ("netdetect", "netdetect"), ("gateway", "gateway"))
KEY_NAMES = tuple(key for key, _field in KEYS)
FIELD_OF = dict(KEYS)


def conf_path(state_path):
    """``hccn.conf`` in the directory of the state file (``/var/lib/npu-sim/hccn.conf`` on a simulated node)."""
    return os.path.join(os.path.dirname(os.path.abspath(state_path)), FILE_NAME)


def from_running(net):
    """The hccn.conf keys of the port's current values (those that are set)."""
    return dict((key, net[field]) for key, field in KEYS if net.get(field))


def persisted(net):
    """What hccn.conf holds for the port: ``net.persisted``; a state written before it existed has none, and then
    every value the port has was set through hccn_tool (which persists it) or by init: its current values."""
    kept = net.get("persisted")
    return dict(kept) if isinstance(kept, dict) else from_running(net)


def record(net, keys):
    """After a successful set: the port's current value of each of ``keys`` is what the file now holds (a value
    the set cleared, as ``-ip -s`` clears a gateway outside the new subnet, leaves the file)."""
    kept = persisted(net)
    for key in keys:
        value = net.get(FIELD_OF[key])
        if value:
            kept[key] = value
        else:
            kept.pop(key, None)
    net["persisted"] = kept


def has_ports(st):
    return any(npu.get("net") is not None for npu in st.get("npus", []))


def render(st):
    """The text of hccn.conf: ``key_N=value`` lines sorted by device, then key; None for a node without ports."""
    if not has_ports(st):
        return None
    lines = []
    for npu in sorted(st["npus"], key=lambda item: item["id"]):
        if npu.get("net") is None:
            continue
        kept = persisted(npu["net"])
        for key in sorted(kept):
            if key in FIELD_OF and kept[key]:
                lines.append("%s_%d=%s" % (key, npu["id"], kept[key]))
    return "".join(line + "\n" for line in lines)


def write(state_path, st):
    """Write hccn.conf beside ``state_path`` from ``st`` (the caller holds the state's lock); a node without
    ports has none (one left by an earlier init of another product is removed). Returns the path or None."""
    target = conf_path(state_path)
    text = render(st)
    if text is None:
        if os.path.lexists(target):
            os.unlink(target)
        return None
    tmp = "%s.tmp.%d" % (target, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, text.encode("ascii"))
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    return target


def parse(text):
    """{device: {key: value}} of an hccn.conf text; blank lines, ``#`` comments and keys other than KEY_NAMES
    (``send_arp_status_N`` and the like) are skipped."""
    result = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        key, _sep, device = name.strip().rpartition("_")
        if key not in FIELD_OF or not device.isdigit():
            continue
        value = value.strip()
        if value:
            result.setdefault(int(device), {})[key] = value
    return result


def read(state_path):
    """The parsed hccn.conf beside ``state_path``, or None when there is none."""
    try:
        with open(conf_path(state_path), encoding="utf-8") as handle:
            return parse(handle.read())
    except FileNotFoundError:
        return None
