# Sourced by mkinitramfs.sh and mkinitramfs-uroce.sh (which define die).
# ldd_libs FILE: the shared libraries FILE needs, one path a line, from ldd run in a clean
# environment, so that a caller's LD_LIBRARY_PATH or LD_PRELOAD cannot leak in; a library
# ldd cannot find ends the build (die).
ldd_libs() {
	local line lib
	while read -r line; do
		case $line in
		*"=> not found"*) die "$1: $line" ;;
		*"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
		/*) lib=${line%% (*} ;;
		*) continue ;;
		esac
		printf '%s\n' "$lib"
	done < <(env -i PATH=/usr/bin:/bin ldd "$1" 2>/dev/null || true)
}
