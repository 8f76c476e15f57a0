# Sourced by test scripts that run rdma-core's own test suite (Debian's python3-pyverbs).
# rdma_core_tests NAME: copy /usr/share/doc/rdma-core/tests into a new temporary folder (in $dir,
# removed at exit), unpack the modules Debian ships gzipped (the runner imports them all) and
# change into it. Exits 1, as NAME, with the reason if it cannot.
rdma_core_tests() {
	local src=/usr/share/doc/rdma-core/tests
	if [ ! -d "$src" ]; then
		echo "$1: $src is missing (Debian's python3-pyverbs; scripts/setup.sh installs it)" >&2
		exit 1
	fi
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	if ! cp -r "$src" "$dir/"; then
		echo "$1: cannot copy $src" >&2
		exit 1
	fi
	cd "$dir/tests" || exit 1
	if compgen -G '*.gz' >/dev/null && ! gunzip -f ./*.gz; then
		echo "$1: cannot gunzip the tests" >&2
		exit 1
	fi
}
