"""The RoCE port of a fresh simulated NPU: its address plan, counters, certificates, optics and cabling.

Parameter-plane address plan (see docs/simulator.md "IP plan"): NPU d of the node with index n gets
10.20.d.(10 + n)/24. Each NPU rank d is one rail with its own /24.
"""

IP_PLAN_PREFIX = "10.20"
IP_PLAN_HOST_OFFSET = 10
IP_PLAN_NETMASK = "255.255.255.0"

STAT_KEYS = (
    "mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num",
    "mac_tx_pfc_pri0_pkt_num", "mac_tx_pfc_pri1_pkt_num", "mac_tx_pfc_pri2_pkt_num", "mac_tx_pfc_pri3_pkt_num",
    "mac_tx_pfc_pri4_pkt_num", "mac_tx_pfc_pri5_pkt_num", "mac_tx_pfc_pri6_pkt_num", "mac_tx_pfc_pri7_pkt_num",
    "mac_rx_pfc_pkt_num",
    "mac_rx_pfc_pri0_pkt_num", "mac_rx_pfc_pri1_pkt_num", "mac_rx_pfc_pri2_pkt_num", "mac_rx_pfc_pri3_pkt_num",
    "mac_rx_pfc_pri4_pkt_num", "mac_rx_pfc_pri5_pkt_num", "mac_rx_pfc_pri6_pkt_num", "mac_rx_pfc_pri7_pkt_num",
    "mac_tx_total_pkt_num", "mac_tx_total_oct_num", "mac_tx_bad_pkt_num", "mac_tx_bad_oct_num",
    "mac_rx_total_pkt_num", "mac_rx_total_oct_num", "mac_rx_bad_pkt_num", "mac_rx_bad_oct_num",
    "roce_rx_rc_pkt_num", "roce_rx_all_pkt_num", "roce_rx_err_pkt_num",
    "roce_tx_rc_pkt_num", "roce_tx_all_pkt_num", "roce_tx_err_pkt_num",
    "roce_cqe_num", "roce_rx_cnp_pkt_num", "roce_tx_cnp_pkt_num", "roce_unexpected_ack_num",
    "roce_out_of_order_num", "roce_verification_err_num", "roce_qp_status_err_num", "roce_new_pkt_rty_num",
    "nic_tx_all_pkg_num", "nic_tx_all_oct_num", "nic_rx_all_pkg_num", "nic_rx_all_oct_num",
)
# Printed only by an hccn_tool built with HCCN_TOOL_SHOW_EXT_STAT (driver source tool.c tool_display_mac_info and
# tool_display_roce_info), each after the counter named here; the simulator prints them when the node's
# settings.hccn_ext_stat is true.
EXT_STAT_KEYS = (("mac_rx_fcs_err_pkt_num", "mac_rx_bad_oct_num"), ("roce_ecn_db_num", "roce_new_pkt_rty_num"))


def stat_keys(ext=False):
    """The counters ``-stat -g`` prints, in its order: STAT_KEYS, and with ``ext`` the extended ones in their places."""
    keys = list(STAT_KEYS)
    if ext:
        for key, after in EXT_STAT_KEYS:
            keys.insert(keys.index(after) + 1, key)
    return tuple(keys)


def default_dscp_map():
    """Untuned DSCP -> TC map of the simulator: TC = DSCP >> 4 (0-15 -> 0 ... 48-63 -> 3). An assumption."""
    return [dscp >> 4 for dscp in range(64)]


def plan_ip(index, device):
    return "%s.%d.%d" % (IP_PLAN_PREFIX, device, IP_PLAN_HOST_OFFSET + index)


def plan_gateway(device):
    """The gateway (and netdetect address) of rail ``device``, as a deployed node has them configured."""
    return "%s.%d.1" % (IP_PLAN_PREFIX, device)


def _default_certs(device):
    # Preconfigured device certificates; issuers/dates follow the CANN HCCL doc sample.
    return [
        {"type": "pub cert", "subject": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=npu%d" % device,
         "issuer": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA", "start": 1582082361, "end": 1897442361},
        {"type": "ca1 cert", "subject": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA",
         "issuer": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "start": 1582082347, "end": 1897442347},
        {"type": "ca2 cert", "subject": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA",
         "issuer": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "start": 1582082350, "end": 1897442350},
    ]


def _optical(index, device):
    seed = (index * 8 + device) % 17
    return {
        "present": "present",
        "temperature_c": 44 + seed % 6,
        "high_power_enable_reg": "enabled",
        "vendor_name": "Hisense",
        "vendor_part_number": "LTH7D02-PC+",
        "vendor_serial_number": "V8BD6H2%04d" % (index * 10 + device),
        "vendor_org_unique_id": "0xac 0x4a 0x0",
        "xsfp_identifier": "QSFP+ or later",
        "xsfp_wave_length_nm": 850,
        "manufact_date_code": "2024.3.18",
        "vcc_mv": 3262.9,
        "tx_power_mw": [1.4035 + 0.001 * seed, 1.3968, 1.4140, 1.4988],
        "rx_power_mw": [1.0189, 0.9954, 0.9907, 1.0213],
        "vcc_high_thres_mv": 3465.0,
        "vcc_low_thres_mv": 3135.0,
        "temp_high_thres_c": 70,
        "temp_low_thres_c": 0,
        "txpower_high_thres_mw": 3.5481,
        "txpower_low_thres_mw": 0.2818,
        "rxpower_high_thres_mw": 3.5481,
        "rxpower_low_thres_mw": 0.1445,
        "tx_bias_ma": [7.936, 7.928, 7.936, 7.924],
        "tx_los_flag": 0,
        "rx_los_flag": 0,
        "tx_lol_flag": 0,
        "rx_lol_flag": 0,
        "host_snr_db": [None, None, None, None],
        "media_snr_db": [23.1211, 22.6289, 22.1875, 23.2969],
    }


def new_port(index, device, created):
    """The ``net`` section of NPU ``device`` of the node with index ``index``: untuned (MTU 1500, no PFC priority,
    the default DSCP map, TLS on), link UP since ``created``."""
    return {
        "ip": plan_ip(index, device),
        "netmask": IP_PLAN_NETMASK,
        "gateway": plan_gateway(device),
        "netdetect": plan_gateway(device),
        # what the node's /etc/hccn.conf holds for the port (hccnconf.py): the plan, as the OS install wrote it
        "persisted": {"address": plan_ip(index, device), "netmask": IP_PLAN_NETMASK,
                      "netdetect": plan_gateway(device), "gateway": plan_gateway(device)},
        "net_health": None,
        "tls": {"enable": 1, "preconfigured": 1, "alarm_days": 60, "certs": _default_certs(device)},
        "pfc": [0] * 8,
        # when PFC was enabled on each priority (epoch seconds; null while disabled): the PFC set writes
        # it, the pause counters of -pfc_stat -g and -stat -g grow from it
        "pfc_since": [None] * 8,
        "dscp_to_tc": default_dscp_map(),
        "mtu": 1500,
        "fec": "rs",
        "speed_mbps": 200000,
        "link": {"down_until": None, "stuck": False, "events": [[created, "UP"]]},
        "optical": _optical(index, device),
        "stats": dict((key, 0) for key in STAT_KEYS),
        "pfc_stat": {"tx_ms": [0.0] * 8, "rx_ms": [0.0] * 8, "warn_cnt": [0] * 8, "err_cnt": [0] * 8},
        "lldp": {
            "chassis_mac": "a4:be:2b:%02x:%02x:01" % (index % 256, device),
            "port_ifname": "400GE1/%d/%d:%d" % (device // 2 + 1, index % 48 + 1, device % 2 + 1),
            "system_name": "leaf-%02d" % (device // 2 + 1),
            "management_ip": "192.168.200.%d" % (device // 2 + 1),
            "max_frame": 9216,
        },
    }
