#!/usr/bin/env bash
# rsockets' defaults from /etc/rdma/rsocket/ (verbs-shim/rdmacm/rsocket_conf.c), as rdma-core
# reads them. In a mount namespace of its own (as root), the test puts a tmpfs over /etc/rdma,
# so that no other process sees its files, and checks with rs_check (tests/rsocket/rs_check.c)
# the options of a new stream socket:
#   1. no files: rdma-core's defaults (128 KiB buffers, queues of 384, inline 64, no iomap);
#   2. every file set: each value is taken (the buffers as given, the iomap size rounded as
#      the handshake's byte says it);
#   3. values out of bounds are bounded as the options are (queues 16..65534, buffers at least
#      4096);
#   4. a file without a number (and one too large) is refused with an error line naming its
#      path, and the default stays.
#   conf.sh RS_CHECK SANITIZER
set -uo pipefail
rs_check=$1 sanitizer=$2
if [[ $sanitizer == thread ]]; then
	echo "conf: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
if [[ $(id -u) != 0 ]]; then
	echo "conf: FAIL: needs root (a mount namespace over /etc/rdma)"
	exit 1
fi
if [[ -z ${RS_CONF_INSIDE:-} ]]; then
	RS_CONF_INSIDE=1 exec unshare --mount --propagation private "$0" "$@"
fi
mkdir -p /etc/rdma && mount -t tmpfs tmpfs /etc/rdma || {
	echo "conf: FAIL: cannot mount a tmpfs on /etc/rdma"
	exit 1
}
dir=/etc/rdma/rsocket
fails=0
check() { # WHAT SNDBUF RCVBUF SQ RQ INLINE IOMAP [STDERR-PATTERN]
	local what=$1 err
	shift
	err=$(mktemp)
	if ! "$rs_check" defaults "$1" "$2" "$3" "$4" "$5" "$6" 2>"$err" >/dev/null; then
		echo "conf: FAIL: $what"
		cat "$err"
		fails=$((fails + 1))
	elif [[ -n ${7:-} ]] && ! grep -q -- "$7" "$err"; then
		echo "conf: FAIL: $what: no error line '$7' on stderr:"
		cat "$err"
		fails=$((fails + 1))
	elif [[ -z ${7:-} && -s $err ]]; then
		echo "conf: FAIL: $what: unexpected stderr:"
		cat "$err"
		fails=$((fails + 1))
	else
		echo "conf: ok: $what"
	fi
	rm -f "$err"
}
set_files() { # polling inline sq rq mem wmem iomap
	rm -rf "$dir" && mkdir -p "$dir"
	local names=(polling_time inline_default sqsize_default rqsize_default mem_default
		wmem_default iomap_size) i=0
	for v in "$@"; do
		[[ $v != - ]] && printf '%s\n' "$v" >"$dir/${names[$i]}"
		i=$((i + 1))
	done
}

check "no files: rdma-core's defaults" 131072 131072 384 384 64 0
set_files 20 128 200 300 65536 32768 300
# iomap 300: above 128 the handshake's byte says 128 | (300 >> 8) = 129, read back as 256.
check "every file set" 32768 65536 200 300 128 256
set_files - - 3 65535 100 10 -
check "out of bounds: queues 16..65534, buffers at least 4096" 4096 4096 16 65534 64 0
set_files - - 70000 - lots 0x10 -
check "no number, or too large: the defaults stay, each file named" 131072 131072 384 384 64 0 \
	"$dir/mem_default: 'lots' is not a number"
# Taken whole before grep reads it: grep -q stops at its match, and with pipefail a writer
# still writing would die of SIGPIPE and fail the pipeline.
err=$("$rs_check" defaults 131072 131072 384 384 64 0 2>&1 >/dev/null)
grep -q "$dir/sqsize_default: '70000' is not a number from 0 to 65535" <<<"$err" ||
	{ echo "conf: FAIL: sqsize_default '70000' not reported"; fails=$((fails + 1)); }
grep -q "$dir/wmem_default: '0x10'" <<<"$err" ||
	{ echo "conf: FAIL: wmem_default '0x10' not reported"; fails=$((fails + 1)); }
((fails == 0)) && echo "conf: ok: all" && exit 0
exit 1
