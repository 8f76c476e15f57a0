#!/bin/sh
# Generate the linker version script of one of uroce's drop-in libraries from the installed
# rdma-core library (ABI.md §1.1, §1.2): every default (@@) symbol goes into exactly
# the version node that holds it there; the public nodes form the chain
# PREFIX_1.0 <- 1.1 <- ... in numeric order; PREFIX_PRIVATE_<N> (libibverbs has one) stands
# alone. Compat-only (@) versions are left out: no target binary imports them (ABI.md §1.1).
#
# Usage: version-script.sh OBJDUMP LIBRARY PREFIX  > library.map
#   e.g. version-script.sh objdump /usr/lib/x86_64-linux-gnu/libibverbs.so.1 IBVERBS
#        version-script.sh objdump /usr/lib/x86_64-linux-gnu/librdmacm.so.1 RDMACM
set -eu

if [ $# -ne 3 ]; then
	echo "usage: $0 OBJDUMP LIBRARY PREFIX" >&2
	exit 2
fi
objdump=$1
lib=$2
pfx=$3
if [ ! -r "$lib" ]; then
	echo "$0: cannot read $lib (is rdma-core (libibverbs1, librdmacm1) installed?)" >&2
	exit 1
fi

# objdump -T prints a defined versioned symbol as
#   ADDR FLAGS TYPE SECTION SIZE VERSION NAME      (default version)
#   ADDR FLAGS TYPE SECTION SIZE (VERSION) NAME    (hidden, compat-only version)
# and the version definitions themselves as symbols named like their node.
"$objdump" -T "$lib" | awk -v lib="$lib" -v pfx="$pfx" '
NF >= 7 && index($(NF - 1), pfx "_") == 1 && $0 !~ /\*UND\*/ {
	node = $(NF - 1)
	name = $NF
	if (name == node)
		next
	if (!(node in count))
		nodes[++n] = node
	syms[node, ++count[node]] = name
}
END {
	if (n == 0) {
		print "version-script: no " pfx "_ symbols in " lib > "/dev/stderr"
		exit 1
	}
	# Public nodes IBVERBS_1.<minor>, sorted by minor (insertion sort: a dozen nodes).
	npub = 0
	for (i = 1; i <= n; i++) {
		if (nodes[i] ~ ("^" pfx "_1\\.[0-9]+$"))
			pub[++npub] = nodes[i]
		else if (nodes[i] ~ ("^" pfx "_PRIVATE_[0-9]+$"))
			priv = nodes[i]
		else {
			print "version-script: unexpected node " nodes[i] > "/dev/stderr"
			exit 1
		}
	}
	for (i = 2; i <= npub; i++) {
		v = pub[i]
		for (j = i - 1; j >= 1 && minor(pub[j]) > minor(v); j--)
			pub[j + 1] = pub[j]
		pub[j + 1] = v
	}
	if (priv == "" && pfx == "IBVERBS") {
		print "version-script: no IBVERBS_PRIVATE_ node in " lib > "/dev/stderr"
		exit 1
	}
	print "/* Generated from " lib " by verbs-shim/gen/version-script.sh. */"
	for (i = 1; i <= npub; i++) {
		emit(pub[i])
		if (i == 1)
			print "\tlocal: *;"
		print (i == 1 ? "};" : "} " pub[i - 1] ";")
	}
	if (priv != "") {
		emit(priv)
		print "};"
	}
}
function minor(node) {
	sub(/^[A-Z]+_1\./, "", node)
	return node + 0
}
function emit(node,    k) {
	print node " {"
	print "\tglobal:"
	for (k = 1; k <= count[node]; k++)
		print "\t\t" syms[node, k] ";"
}
'
