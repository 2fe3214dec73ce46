#!/bin/sh
# npu_check.sh - the method's node check as operators write it (benchmark baseline, issue #14).
# Plain POSIX sh, run as root on one node: for every NPU, one vendor-tool call per question,
# one after the other. Prints one line per problem ("<host> NPU <i>: ...") and exits 1 when
# there is any, 0 when there is none (then it prints one "OK" line).
#
#   sh npu_check.sh [-b] [-a ADDR0,ADDR1,...] [-n NPUS] [-m MTU] [-p PFC_PRIORITY] [-d DSCP]
#                   [-t TC] [-T MAX_TEMP_C]
#   defaults: -n 8 -m 9000 -p 4 -d 33 -t 3 -T 80
#   -b  base checks only (before the lossless RoCE change): no MTU, PFC and DSCP checks
#   -a  the planned address of NPU 0, 1, ... (without it, any address will do)
#
# Per NPU: npu-smi health, temperature and double-bit ECC errors; hccn_tool link, address,
# net_health, and (without -b) MTU, PFC and the TC of the lossless DSCP. What it does not do
# (compare with stage 0/4 of playbooks/site.yml): no netmask or parameter-plane check, no ECC
# growth, no TLS, no cross-node consistency (a node only sees itself), no NUMA/host checks, no
# parsing beyond grep/sed.
set -u
PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin
HCCN_TOOL=${HCCN_TOOL:-/usr/local/Ascend/driver/tools/hccn_tool}
NPU_SMI=${NPU_SMI:-npu-smi}

npus=8 mtu=9000 prio=4 dscp=33 tc=3 maxtemp=80 base=0 addresses=""
while getopts ba:n:m:p:d:t:T: opt; do
  case $opt in
    b) base=1 ;;
    a) addresses=$OPTARG ;;
    n) npus=$OPTARG ;;
    m) mtu=$OPTARG ;;
    p) prio=$OPTARG ;;
    d) dscp=$OPTARG ;;
    t) tc=$OPTARG ;;
    T) maxtemp=$OPTARG ;;
    *) echo "usage: npu_check.sh [-b] [-a ADDR0,ADDR1,...] [-n NPUS] [-m MTU] [-p PFC_PRIORITY] [-d DSCP] [-t TC] [-T MAX_TEMP_C]" >&2
       exit 2 ;;
  esac
done

host=$(hostname)
problems=0
bad() {
  echo "$host NPU $i: $*"
  problems=$((problems + 1))
}

# the PFC line we want: "0 0 0 0 1 0 0 0" for priority 4
want_pfc=""
p=0
while [ $p -lt 8 ]; do
  if [ $p -eq "$prio" ]; then bit=1; else bit=0; fi
  want_pfc="$want_pfc $bit"
  p=$((p + 1))
done
want_pfc=${want_pfc# }

if [ ! -x "$HCCN_TOOL" ]; then
  echo "$host: $HCCN_TOOL not found"
  exit 1
fi

i=0
while [ $i -lt "$npus" ]; do
  out=$($NPU_SMI info -t health -i $i 2>&1)
  echo "$out" | grep -q "Health Status *: OK" || bad "health: $(echo "$out" | sed -n 's/.*Health Status *: *//p' | head -n 1)"

  temp=$($NPU_SMI info -t temp -i $i 2>&1 | sed -n 's/.*NPU Temperature (C) *: *\([0-9]*\).*/\1/p')
  if [ -z "$temp" ]; then
    bad "temperature not readable"
  elif [ "$temp" -gt "$maxtemp" ]; then
    bad "temperature $temp C above $maxtemp C"
  fi

  out=$($NPU_SMI info -t ecc -i $i 2>&1)
  echo "$out" | grep -q "HBM Double Bit Error Count *: 0\$" ||
    bad "ECC: $(echo "$out" | grep 'HBM Double Bit Error Count' | tr -s ' \t' ' ')"

  out=$($HCCN_TOOL -i $i -link -g 2>&1)
  echo "$out" | grep -q "link status: UP" || bad "link: $out"

  out=$($HCCN_TOOL -i $i -ip -g 2>&1)
  want_ip=$(echo "$addresses" | cut -d, -f$((i + 1)))
  if [ -n "$want_ip" ]; then
    echo "$out" | grep -q "^ipaddr:$want_ip\$" || bad "address: $(echo "$out" | head -n 1), want $want_ip"
  else
    echo "$out" | grep -q "^ipaddr:[0-9]" || bad "no address: $out"
  fi

  out=$($HCCN_TOOL -i $i -net_health -g 2>&1)
  echo "$out" | grep -q "net health status: Success" || bad "net_health: $out"

  if [ $base -eq 1 ]; then
    i=$((i + 1))
    continue
  fi

  out=$($HCCN_TOOL -i $i -mtu -g 2>&1)
  [ "$out" = "mtu:$mtu" ] || bad "MTU: $out, want $mtu"

  out=$($HCCN_TOOL -i $i -pfc -g 2>&1)
  echo "$out" | grep -q "^enabled *$want_pfc *\$" || bad "PFC: $(echo "$out" | tail -n 1), want $want_pfc"

  out=$($HCCN_TOOL -i $i -dscp_to_tc -g dscp "$dscp" 2>&1)
  echo "$out" | grep -Eq "^ *$dscp +$tc *\$" || bad "DSCP $dscp: $(echo "$out" | tail -n 1 | tr -s ' '), want TC $tc"

  i=$((i + 1))
done

if [ $problems -gt 0 ]; then
  exit 1
fi
if [ $base -eq 1 ]; then
  echo "$host OK: $npus NPUs (health, temperature, ECC, link, address, net_health)"
else
  echo "$host OK: $npus NPUs (health, temperature, ECC, link, address, net_health, MTU $mtu, PFC $prio, DSCP $dscp->TC $tc)"
fi
exit 0
