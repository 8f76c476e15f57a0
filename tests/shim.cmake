# verbs-shim: uroce's drop-in libibverbs.so.1.
#
# Unit tests are built against the system's <infiniband/verbs.h> and linked against OUR
# library (target uroce_ibverbs), so the inline wrappers and layouts are rdma-core's.
foreach(_t device mr cq qp)
  uroce_test(test_shim_${_t} SOURCES test_shim_${_t}.c LIBS uroce_ibverbs Threads::Threads
             LABELS shim)
  set_tests_properties(test_shim_${_t} PROPERTIES TIMEOUT 60)
endforeach()

# Every libibverbs symbol imported by rdma-core's programs, pyverbs and providers - and every
# default symbol of the installed libibverbs - is exported by ours at the same version.
add_test(NAME shim_symbols
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/shim/check-symbols.sh $<TARGET_FILE:uroce_ibverbs>
          ${UROCE_SYSTEM_IBVERBS})
# Unmodified rdma-core programs on uroce through uroce-run.
add_test(NAME shim_programs
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/shim/run-programs.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          "${UROCE_SANITIZE}")
set_tests_properties(shim_symbols shim_programs PROPERTIES LABELS "shim;integration" TIMEOUT 120
                     SKIP_RETURN_CODE 77)
# A thread cancelled inside a cancellation point trips a false stack-buffer-underflow in ASan's
# sigaltstack interceptor (google/sanitizers#1399); shim_cq cancels one on purpose.
if(UROCE_SANITIZE STREQUAL "address")
  set_tests_properties(test_shim_cq PROPERTIES ENVIRONMENT "ASAN_OPTIONS=use_sigaltstack=0")
endif()
