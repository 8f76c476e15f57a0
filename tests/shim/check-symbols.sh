#!/usr/bin/env bash
# Symbol check of one of uroce's drop-in libraries (ABI.md §1): programs are linked BIND_NOW, so
# every symbol they import must exist at its exact version node when they load.
#  1. every default (@@) symbol of the installed library is exported by ours, same node;
#  2. every PREFIX_* symbol imported by the binaries of ibverbs-utils, rdmacm-utils, perftest,
#     python3-pyverbs, ibverbs-providers and librdmacm1 is exported by ours at that node.
# Fails listing what is missing.
# Usage: check-symbols.sh OUR_LIBRARY SYSTEM_LIBRARY PREFIX     (PREFIX: IBVERBS or RDMACM)
set -euo pipefail

ours=$1
system=$2
prefix=$3
packages="ibverbs-utils rdmacm-utils perftest python3-pyverbs ibverbs-providers librdmacm1"
fail=0

# "NODE SYMBOL" for each default version a library defines.
defined() {
	objdump -T "$1" | awk -v p="^${prefix}_" 'NF >= 7 && $(NF - 1) ~ p && $0 !~ /\*UND\*/ &&
		$NF != $(NF - 1) { print $(NF - 1), $NF }' | sort -u
}

# "NODE SYMBOL" for each versioned symbol of the library an object imports.
imported() {
	objdump -T "$1" 2>/dev/null |
		awk -v p="^\\(?${prefix}_" '/\*UND\*/ && $(NF - 1) ~ p { v = $(NF - 1);
			gsub(/[()]/, "", v); print v, $NF }' | sort -u
}

exports=$(defined "$ours")
if [[ -z $exports ]]; then
	echo "check-symbols: $ours exports no ${prefix}_ symbol" >&2
	exit 1
fi

missing=$(comm -23 <(defined "$system") <(echo "$exports"))
if [[ -n $missing ]]; then
	echo "check-symbols: default symbols of $system that $ours does not export:" >&2
	echo "$missing" | sed 's/^/  /' >&2
	fail=1
fi
echo "check-symbols: $(echo "$exports" | wc -l) symbols exported, $(defined "$system" | wc -l) in $system"

objects=0
for pkg in $packages; do
	if ! files=$(dpkg -L "$pkg" 2>/dev/null); then
		echo "check-symbols: package $pkg is not installed (scripts/setup.sh installs it)" >&2
		fail=1
		continue
	fi
	while IFS= read -r f; do
		[[ -f $f && ! -L $f ]] || continue
		# ELF objects only (programs, libraries, Python extension modules).
		[[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
		objects=$((objects + 1))
		need=$(imported "$f")
		[[ -n $need ]] || continue
		lack=$(comm -23 <(echo "$need") <(echo "$exports"))
		if [[ -n $lack ]]; then
			echo "check-symbols: $f ($pkg) imports symbols $ours does not export:" >&2
			echo "$lack" | sed 's/^/  /' >&2
			fail=1
		fi
	done <<<"$files"
done
echo "check-symbols: $objects ELF objects of: $packages"
((fail == 0)) && echo "check-symbols: ok"
exit $fail
