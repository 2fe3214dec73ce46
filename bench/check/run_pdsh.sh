#!/bin/sh
# run_pdsh.sh - run bench/check/npu_check.sh on every node of a PoD at once, the way operators
# run the method's check script with a parallel shell (benchmark baseline, issue #14).
#
#   bench/check/run_pdsh.sh -i HOSTS_YML [-F SSH_CONFIG] [-w HOST,HOST...] [-f FANOUT]
#                           [-t clush|pdsh] [-- NPU_CHECK_ARGS...]
#   bench/check/run_pdsh.sh HOSTS_YML [SSH_CONFIG] [-- NPU_CHECK_ARGS...]   (the same, positional)
#
#   -i  inventory written by `podctl up --inventory` (group ascend_pod); the hosts are read from it
#   -F  the ssh_config podctl wrote (default: ssh_config beside the inventory); it carries the
#       address, user, key and mux of every node, so the parallel shell must hand it to ssh
#   -w  hosts to check instead of the inventory's
#   -f  fanout (default 64: every node of a PoD at once)
#   -t  clush (default) or pdsh
#   after --: arguments of npu_check.sh, e.g. -- -m 9000 -p 4 -d 33 -t 3
#
# Exit status: the largest exit status of the nodes (npu_check.sh: 1 = problems found), 255 when
# ssh to a node failed. Every problem is one line "<host> NPU <i>: ...".
#
# Why clush by default: both ClusterShell (clush 1.9, Debian package clustershell) and pdsh (2.34,
# Debian package pdsh) work with the podctl ssh_config, but
#   - clush forwards its standard input to every node, so the script goes to each node in the same
#     single ssh session that runs it (`clush ... 'sh -s' < npu_check.sh`), and it takes the ssh
#     options itself (-o "-F ssh_config"); -S returns the largest exit status;
#   - pdsh does not forward standard input (`pdsh ... 'sh -s' < script` hangs), so the script has
#     to be copied first (pdcp needs pdsh installed on every node) or shipped on the command line
#     (done here: base64 in the remote command, decoded into `sh -s`); and pdsh knows only ~/.ssh/config: the ssh_config
#     has to be passed through PDSH_SSH_ARGS. PDSH_SSH_ARGS_APPEND='-F cfg' works too, but pdsh's
#     default arguments then keep "-l <local user>", which overrides the User of the ssh_config;
#     PDSH_SSH_ARGS replaces them ("-x -a -F cfg %h"), so the ssh_config decides the user.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
script="$here/npu_check.sh"

inventory="" ssh_config="" hosts="" fanout=64 tool=clush
usage() {
  sed -n '5,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    -i) inventory=$2; shift 2 ;;
    -F) ssh_config=$2; shift 2 ;;
    -w) hosts=$2; shift 2 ;;
    -f) fanout=$2; shift 2 ;;
    -t) tool=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    -*) echo "run_pdsh.sh: unknown argument $1" >&2; usage ;;
    *)
      if [ -z "$inventory" ]; then inventory=$1
      elif [ -z "$ssh_config" ]; then ssh_config=$1
      else echo "run_pdsh.sh: unexpected argument $1" >&2; usage
      fi
      shift ;;
  esac
done

if [ -z "$hosts" ]; then
  [ -n "$inventory" ] || { echo "run_pdsh.sh: give -i HOSTS_YML or -w HOSTS" >&2; exit 2; }
  # The hosts of a podctl inventory: the keys one level below every "hosts:" line.
  hosts=$(awk '
    { match($0, /^ */); ind = RLENGTH }
    /^[[:space:]]*#/ || /^[[:space:]]*$/ { next }
    in_hosts && ind <= hind { in_hosts = 0 }
    in_hosts && ind == hind + 2 && $0 ~ /^ *[A-Za-z0-9_.-]+: *$/ { sub(/^ */, ""); sub(/: *$/, ""); print }
    /^[[:space:]]*hosts:[[:space:]]*$/ { in_hosts = 1; hind = ind }
  ' "$inventory" | sort -u | paste -sd, -)
  [ -n "$hosts" ] || { echo "run_pdsh.sh: no hosts found in $inventory" >&2; exit 2; }
fi
if [ -z "$ssh_config" ] && [ -n "$inventory" ]; then
  ssh_config="$(dirname "$inventory")/ssh_config"
fi
[ -f "$ssh_config" ] || { echo "run_pdsh.sh: ssh_config $ssh_config not found (give -F)" >&2; exit 2; }

# the check's arguments, quoted for the remote shell
args=""
for word in "$@"; do
  args="$args '$(printf '%s' "$word" | sed "s/'/'\\\\''/g")'"
done

case $tool in
  clush)
    command -v clush >/dev/null || { echo "run_pdsh.sh: clush not found (apt-get install clustershell)" >&2; exit 2; }
    exec clush -S -N -f "$fanout" -o "-F $ssh_config" -w "$hosts" "sh -s --$args" < "$script"
    ;;
  pdsh)
    command -v pdsh >/dev/null || { echo "run_pdsh.sh: pdsh not found (apt-get install pdsh)" >&2; exit 2; }
    payload=$(base64 -w0 < "$script")
    PDSH_SSH_ARGS="-x -a -F $ssh_config %h"
    export PDSH_SSH_ARGS
    exec pdsh -S -N -R ssh -f "$fanout" -w "$hosts" "echo $payload | base64 -d | sh -s --$args"
    ;;
  *)
    echo "run_pdsh.sh: -t must be clush or pdsh" >&2
    exit 2
    ;;
esac
