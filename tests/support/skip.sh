# Sourced by test scripts: the reasons a test is skipped (exit 77, ctest's SKIP_RETURN_CODE),
# each said in one line.
# skip_thread SANITIZER: a ThreadSanitizer build, which Debian's programs cannot load.
skip_thread() {
	if [[ $1 == thread ]]; then
		echo "skipped: system programs cannot load a ThreadSanitizer build of uroce"
		exit 77
	fi
}

# skip_unless_root: network namespaces (ip netns) need root.
skip_unless_root() {
	if ((EUID != 0)); then
		echo "skipped: network namespaces need root (and ip netns)"
		exit 77
	fi
}
