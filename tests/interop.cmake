# The interop suite: uroce against the Linux kernel's Soft-RoCE (rdma_rxe in Debian's 6.1
# kernel, booted in qemu under TCG from an initramfs of Debian's rdma-core programs;
# tests/interop/README.md). A missing qemu or kernel fails a test: none ever skips. It runs in
# the release tree only: system programs cannot load a ThreadSanitizer build, and the
# sanitizer trees would only run the same wire twice more. The tests boot VMs: one at a time
# (RUN_SERIAL, one lock), each in a network namespace of its own.
if(NOT UROCE_SANITIZE AND NOT UROCE_FUZZ)
  # ix_scenario runs on both stacks: linked against Debian's rdma-core (libibverbs-dev,
  # librdmacm-dev), it runs as it is in the VM and under uroce-run on the host.
  find_library(UROCE_SYSTEM_IBVERBS ibverbs REQUIRED)
  find_library(UROCE_SYSTEM_RDMACM rdmacm REQUIRED)
  add_executable(ix_scenario interop/ix_scenario.c)
  target_link_libraries(ix_scenario PRIVATE ${UROCE_SYSTEM_RDMACM} ${UROCE_SYSTEM_IBVERBS})

  # uroce_interop_test(NAME SCRIPT NAMESPACE TIMEOUT [ARGS...])
  function(uroce_interop_test name script ns timeout)
    add_test(NAME ${name}
      COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interop/${script}
              --bin ${CMAKE_BINARY_DIR}/bin --ns ${ns} ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "interop;integration" TIMEOUT ${timeout}
                         RESOURCE_LOCK interop_vm RUN_SERIAL TRUE
                         ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
  endfunction()

  # The matrix (interop/matrix.py), one VM boot: each program as server on one side and
  # client on the other, both ways, every capture checked in tshark and scapy.
  uroce_interop_test(interop_matrix matrix.py uroce-ix-matrix 1500)
  # The hardware path (interop/hwpath.py): to rdma-core the guest's rxe0 is a real device, so
  # uroce-run --backend verbs and uroce-bench's hardware column run on it, inside the guest,
  # from this build (an extra initramfs archive, interop/mkinitramfs-uroce.sh). Every run must
  # report a figure.
  uroce_interop_test(interop_hwpath hwpath.py uroce-ix-hw 600)
  # Same behaviour, not only same bytes (interop/behaviour.py): eight scenarios (RNR,
  # go-back-N, a lost READ response, ACK coalescing, a retried atomic, a memory window and
  # SEND with invalidate, DREQ on exit, REJ)
  # between rxe and rxe, uroce and uroce, and across, on two VMs and two namespace hosts;
  # each exchange is checked against the spec's rule and printed beside the others.
  uroce_interop_test(interop_behaviour behaviour.py uroce-ix-beh 900)
  # Under loss (interop/loss.py --required): 5 % of RoCE packets dropped on the bridge, both
  # ways; rping -V -S 60000, ib_write_bw and ib_read_bw at 1 MiB must complete uroce -> rxe
  # and rxe -> uroce. The comparison at 5 % and 20 % between every pair is run by hand
  # (docs/INTEROP.md).
  uroce_interop_test(interop_loss loss.py uroce-ix-loss-ci 1200 --required)
  # rdma_cm's loopback binds (interop/loopback_bind.py): a listener on 127.0.0.1 listens on
  # every device and makes other binds of its port fail with EADDRNOTAVAIL, on the kernel (a
  # uroce client reaching it at the guest's address) and on uroce alike.
  uroce_interop_test(interop_loopback_bind loopback_bind.py uroce-ix-lb 300)
endif()
