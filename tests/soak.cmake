# uroce-soak (tools/soak): rping, ib_send_lat -e, ib_write_bw, ib_send_bw UD and ucmatose at
# once, with a persistent rping server and a transfer as long as the run, for 60 s; fails on
# a hang, a data error or a long-lived process's memory growth. Alone (RUN_SERIAL): it keeps
# both CPUs busy. A ThreadSanitizer build cannot be loaded by the system's programs.
if(NOT UROCE_SANITIZE STREQUAL "thread" AND NOT UROCE_FUZZ)
  add_test(NAME soak_60s
    COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_BINARY_DIR}/bin/uroce-soak --seconds 60
            --udp-port 28791 --tcp-port 18770)
  set_tests_properties(soak_60s PROPERTIES LABELS "soak;integration" TIMEOUT 400
                       RUN_SERIAL TRUE)
  # ASan keeps freed memory in quarantine (256 MiB by default), which would count as growth;
  # leak reports stay off as uroce-run's default has them (the programs' own leaks at exit).
  if(UROCE_SANITIZE STREQUAL "address")
    set_tests_properties(soak_60s PROPERTIES
                         ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=4")
  endif()
endif()
