"""Node names and the ``Pod`` object: paths under the base directory, the record, node addresses."""

import contextlib
import fcntl
import json
import os

from .common import PodError, PodUsageError


def node_names(count):
    width = 3 if count > 99 else 2
    return ["node%0*d" % (width, i) for i in range(1, count + 1)]


def node_index(name):
    return int(name[4:])


DEFAULT_PREFIX = "127.0.1"


def check_prefix(prefix):
    """Return PREFIX when it is a loopback 127.X.Y; raise ``PodUsageError`` otherwise."""
    parts = prefix.split(".")
    if len(parts) != 3 or parts[0] != "127" or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
        raise PodUsageError("--address-prefix must look like 127.X.Y (loopback only), not %r" % prefix)
    return prefix


class Pod:
    """One PoD: paths under its base directory, the record ``pod.json`` kept there, and the
    address prefix its nodes listen on (node N on ``PREFIX.N``; two PoDs can run side by side
    with different prefixes).
    """

    def __init__(self, base, prefix=DEFAULT_PREFIX):
        self.base = os.path.abspath(base)
        self.prefix = check_prefix(prefix)
        self.nodes_dir = os.path.join(self.base, "nodes")
        self.keys_dir = os.path.join(self.base, "keys")
        self.mux_dir = os.path.join(self.base, "mux")
        self.host_key = os.path.join(self.keys_dir, "ssh_host_ed25519_key")
        self.client_key = os.path.join(self.keys_dir, "id_ed25519")
        self.authorized_keys = os.path.join(self.keys_dir, "authorized_keys")
        self.ssh_config = os.path.join(self.base, "ssh_config")
        self.record_path = os.path.join(self.base, "pod.json")

    def with_prefix(self, prefix):
        """The same PoD with its nodes on PREFIX.N."""
        return Pod(self.base, prefix)

    def node_address(self, index):
        return "%s.%d" % (self.prefix, index)

    def node_dir(self, name):
        return os.path.join(self.nodes_dir, name)

    def state_file(self, name):
        return os.path.join(self.node_dir(name), "state", "state.json")

    def sshd_config(self, name):
        return os.path.join(self.node_dir(name), "sshd_config")

    def sshd_log(self, name):
        return os.path.join(self.node_dir(name), "sshd.log")

    @contextlib.contextmanager
    def lock(self):
        """Serialise podctl runs on one base directory."""
        os.makedirs(self.base, exist_ok=True)
        with open(os.path.join(self.base, ".lock"), "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def load(self):
        try:
            with open(self.record_path) as fh:
                return json.load(fh)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise PodError("%s is not valid JSON (%s); remove the PoD by hand" % (self.record_path, exc)) from exc

    def save(self, record):
        tmp = self.record_path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, self.record_path)
