#!/usr/bin/env bash
# libfabric's fi_pingpong (Debian's libfabric-bin) as a server (no address) and a client, through
# uroce-run, on one host or between two network namespaces (middleware/pair.sh), with
# libfabric's defaults (every size, 10 iterations each) and its data checks (-c): both must
# end well and the client print a row for each size.
# Usage: fi-pingpong.sh UROCE_RUN SANITIZER CTRL_PORT PROVIDER EP_TYPE loopback|netns [N]
set -uo pipefail

run=$1 port=$3 prov=$4 ep=$5
command -v fi_pingpong >/dev/null ||
	{ echo "fi-pingpong.sh: fi_pingpong not found (libfabric-bin; scripts/setup.sh installs it)" >&2; exit 1; }
. "$(dirname "$0")/pair.sh"
pair_setup "$2" "$6" "fi$port" "${7:-0}"
# MSG and RDM connect through rdma_cm, which counts 127.0.0.1 as "any" and has no route there
# (the kernel's rdma_resolve_route: ENODEV): on one host their client aims at a device's address,
# as over the kernel's rxe.
if [[ $pair_where == loopback && $ep != dgram ]]; then
	addr=$(ip -4 -o addr show scope global up | awk '{ sub("/.*", "", $4); print $4; exit }')
	[[ -n $addr ]] || { echo "FAIL: fi-pingpong.sh $ep needs an interface besides lo with an IPv4 address" >&2; exit 1; }
fi
export UROCE_UDP_PORT=$((port + 10000))

"${in_a[@]}" timeout -k 5 60 "$run" fi_pingpong -p "$prov" -e "$ep" -B "$port" -c >"$dir/server.out" 2>&1 &
server=$!
pair_wait_tcp "$port" || { echo "FAIL: fi_pingpong's server did not listen" >&2; cat "$dir/server.out" >&2; exit 1; }
"${in_b[@]}" timeout -k 5 60 "$run" fi_pingpong -p "$prov" -e "$ep" -P "$port" -c "$addr" \
	>"$dir/client.out" 2>&1
client_rc=$?
wait "$server"
server_rc=$?
server=
rows=$(grep -cE '^[0-9]+[kmg]? +[0-9]+ +=[0-9]+' "$dir/client.out")
server_rows=$(grep -cE '^[0-9]+[kmg]? +[0-9]+ +=[0-9]+' "$dir/server.out")
# ofi_rxm's teardown (docs/UNSUPPORTED.md, "libfabric's verbs;ofi_rxm at teardown"): after
# every size passed on both sides, the slower side may close its endpoint before it has read its
# "fin" send's completion; vrb_ep_close destroys the QP (which removes its completions, as on
# mlx5), then fails that send as flushed, and fi_pingpong exits 125 with "Work Request Flushed
# Error". Taken as passed only so: one side 125 with that error, the other 0, and both with
# every size's row.
teardown_flush() { # RC OUT
	(($1 == 125)) && grep -q 'cq_readerr: Work Request Flushed Error' "$2"
}
if ((rows > 0 && rows == server_rows)) &&
	{ { teardown_flush "$server_rc" "$dir/server.out" && ((client_rc == 0)); } ||
		{ teardown_flush "$client_rc" "$dir/client.out" && ((server_rc == 0)); }; }; then
	echo "fi-pingpong.sh: known ofi_rxm teardown flush after all $rows sizes (UNSUPPORTED.md)" >&2
	server_rc=0 client_rc=0
fi
if ((server_rc != 0 || client_rc != 0 || rows == 0)); then
	echo "FAIL: fi_pingpong -p '$prov' -e $ep ($pair_where): server exited $server_rc, client $client_rc" >&2
	tail -n 20 "$dir/server.out" "$dir/client.out" >&2
	exit 1
fi
cat "$dir/client.out"
echo "fi_pingpong -p '$prov' -e $ep ($pair_where): $rows sizes, data checked"
