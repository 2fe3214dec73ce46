"""Read the converged nodes back through the vendor tools and parse their real output format."""

import re

import pytest
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool

HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
DEVICES = list(range(8))


def hccn_get(host, device, query):
    cmd = host.run("%s -i %d -%s -g" % (HCCN_TOOL, device, query))
    assert cmd.rc == 0, "hccn_tool -i %d -%s -g failed: %s" % (device, query, cmd.stderr or cmd.stdout)
    data = hccn_tool.PARSERS[query](cmd.stdout)
    assert data["unparsed"] == [], data["unparsed"]
    return data


@pytest.mark.parametrize("device", DEVICES)
def test_port_is_lossless_and_jumbo(host, device):
    assert hccn_get(host, device, "link")["link"] == "UP"
    assert hccn_get(host, device, "mtu")["mtu"] == 9000
    pfc = hccn_get(host, device, "pfc")
    assert pfc["priorities"] == [4]
    assert pfc["bitmap"] == "0,0,0,0,1,0,0,0"
    assert hccn_get(host, device, "dscp_to_tc")["map"][33] == 3


def test_port_addresses_untouched(host):
    """The converge changed MTU, PFC and the DSCP map only: every address is still the one the PoD was created with."""
    planned = {port["device"]: (port["address"], port["netmask"]) for port in host.ansible.get_variables()["npuops_npu_ports"]}
    assert sorted(planned) == DEVICES
    for device in DEVICES:
        ip = hccn_get(host, device, "ip")
        assert (ip["address"], ip["netmask"]) == planned[device], device


def test_governor_is_performance(host):
    out = host.check_output("cpupower frequency-info -p")
    assert re.search(r'governor "performance"', out), out


def test_backup_was_written_before_the_change(host):
    backups = host.run("ls /var/lib/npuops/backup")
    assert backups.rc == 0
    names = [n for n in backups.stdout.split() if n.startswith("hccn-") and n.endswith(".json")]
    assert len(names) == 1, names
    doc = host.file("/var/lib/npuops/backup/" + names[0])
    assert doc.mode == 0o600
    assert '"mtu": 1500' in doc.content_string or '"mtu":1500' in doc.content_string
