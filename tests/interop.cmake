# The interop suite: uroce against the Linux kernel's Soft-RoCE (rdma_rxe in Debian's 6.1
# kernel, booted in qemu under TCG from an initramfs of Debian's rdma-core programs;
# tests/interop/README.md). One VM boot runs the whole matrix (interop/matrix.py): each
# program as server on one side and client on the other, both ways, every capture checked
# in tshark and scapy. A missing qemu or kernel fails the test: it never skips. It runs in
# the release tree only: system programs cannot load a ThreadSanitizer build, and the
# sanitizer trees would only run the same wire twice more.
if(NOT UROCE_SANITIZE AND NOT UROCE_FUZZ)
  add_test(NAME interop_matrix
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/matrix.py
            --bin ${CMAKE_BINARY_DIR}/bin --ns uroce-ix-matrix)
  set_tests_properties(interop_matrix PROPERTIES LABELS "interop;integration" TIMEOUT 1500
                       RESOURCE_LOCK interop_vm RUN_SERIAL TRUE ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
endif()
