#!/usr/bin/env bash
# A remote-shell agent for MPI launchers (Open MPI's plm_rsh_agent, MPICH Hydra's
# -launcher-exec), so that an MPI job spans network-namespace "hosts" with no ssh: the command
# for HOST runs in HOST's namespace, under uroce-run, in a UTS namespace of its own whose host
# name is the namespace's (MPI libraries tell hosts apart by name: two ranks with one name
# would be "on one node" and talk through shared memory).
#   netns-launch.sh [-OPTION...] HOST COMMAND...
# Options before HOST (ssh's "-x" from Hydra) are ignored; COMMAND is a remote shell's command
# line, run by /bin/sh -c. Environment: NETNS_LAUNCH_HOSTS="HOST=NAMESPACE ..." maps the
# launcher's host names to namespaces (NAMESPACE "-": this one, for "hosts" that differ in
# name only); NETNS_LAUNCH_RUN is uroce-run's path. Exits 255 (as ssh
# does when it cannot reach a host) for a host not in the map.
set -u
while [[ ${1:-} == -* ]]; do shift; done
host=${1:?netns-launch.sh: no host}
shift
ns=
for entry in ${NETNS_LAUNCH_HOSTS:-}; do
	[[ ${entry%%=*} == "$host" ]] && ns=${entry#*=}
done
if [[ -z $ns ]]; then
	echo "netns-launch.sh: host $host is not in NETNS_LAUNCH_HOSTS (${NETNS_LAUNCH_HOSTS:-})" >&2
	exit 255
fi
in_ns=(ip netns exec "$ns")
[[ $ns == - ]] && in_ns=() ns=$host
# shellcheck disable=SC2016 # $0 and $@ belong to the inner shell
exec "${in_ns[@]}" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$ns" \
	"${NETNS_LAUNCH_RUN:?netns-launch.sh: NETNS_LAUNCH_RUN unset}" /bin/sh -c "$*"
