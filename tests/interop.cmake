# The interop suite: uroce against the Linux kernel's Soft-RoCE (rdma_rxe in Debian's 6.1
# kernel, booted in qemu under TCG from an initramfs of Debian's rdma-core programs;
# tests/interop/README.md). One VM boot runs the whole matrix (interop/matrix.py): each
# program as server on one side and client on the other, both ways, every capture checked
# in tshark and scapy. A missing qemu or kernel fails the test: it never skips. It runs in
# the release tree only: system programs cannot load a ThreadSanitizer build, and the
# sanitizer trees would only run the same wire twice more.
if(NOT UROCE_SANITIZE AND NOT UROCE_FUZZ)
  # ix_scenario runs on both stacks: linked against Debian's rdma-core (libibverbs-dev,
  # librdmacm-dev), it runs as it is in the VM and under uroce-run on the host.
  find_library(UROCE_SYSTEM_IBVERBS ibverbs REQUIRED)
  find_library(UROCE_SYSTEM_RDMACM rdmacm REQUIRED)
  add_executable(ix_scenario interop/ix_scenario.c)
  target_link_libraries(ix_scenario PRIVATE ${UROCE_SYSTEM_RDMACM} ${UROCE_SYSTEM_IBVERBS})
  add_test(NAME interop_matrix
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/matrix.py
            --bin ${CMAKE_BINARY_DIR}/bin --ns uroce-ix-matrix)
  set_tests_properties(interop_matrix PROPERTIES LABELS "interop;integration" TIMEOUT 1500
                       RESOURCE_LOCK interop_vm RUN_SERIAL TRUE ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
  # The hardware path (interop/hwpath.py): to rdma-core the guest's rxe0 is a real device, so
  # uroce-run --backend verbs and uroce-bench's hardware column run on it, inside the guest,
  # from this build (an extra initramfs archive, interop/mkinitramfs-uroce.sh). Every run must
  # report a figure; it never skips either.
  add_test(NAME interop_hwpath
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/hwpath.py
            --bin ${CMAKE_BINARY_DIR}/bin --ns uroce-ix-hw)
  set_tests_properties(interop_hwpath PROPERTIES LABELS "interop;integration" TIMEOUT 600
                       RESOURCE_LOCK interop_vm RUN_SERIAL TRUE ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
endif()

# Same behaviour, not only same bytes (interop/behaviour.py): seven scenarios (RNR, go-back-N,
# a lost READ response, ACK coalescing, a retried atomic, DREQ on exit, REJ) between rxe and
# rxe, uroce and uroce, and across, on two VMs and two namespace hosts; each exchange is
# checked against the spec's rule and printed beside the others.
if(NOT UROCE_SANITIZE AND NOT UROCE_FUZZ)
  add_test(NAME interop_behaviour
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/behaviour.py
            --bin ${CMAKE_BINARY_DIR}/bin --ns uroce-ix-beh)
  set_tests_properties(interop_behaviour PROPERTIES LABELS "interop;integration" TIMEOUT 900
                       RESOURCE_LOCK interop_vm RUN_SERIAL TRUE ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
endif()

# Under loss (interop/loss.py --required): 5 % of RoCE packets dropped on the bridge, both
# ways; rping -V -S 60000, ib_write_bw and ib_read_bw at 1 MiB must complete uroce -> rxe and
# rxe -> uroce. The comparison at 5 % and 20 % between every pair is run by hand
# (docs/INTEROP.md).
if(NOT UROCE_SANITIZE AND NOT UROCE_FUZZ)
  add_test(NAME interop_loss
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/loss.py
            --bin ${CMAKE_BINARY_DIR}/bin --required --ns uroce-ix-loss-ci)
  set_tests_properties(interop_loss PROPERTIES LABELS "interop;integration" TIMEOUT 1200
                       RESOURCE_LOCK interop_vm RUN_SERIAL TRUE ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
endif()
