# uroce-bench (issue "Benchmarks against hardware and baselines"): its quick matrix runs and
# produces every section with sane figures (bench/bench_quick.py); a check, not a timing.
add_test(NAME bench_quick
  COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_quick.py
          ${CMAKE_BINARY_DIR}/bin "${UROCE_SANITIZE}" 28850 18850)
# It runs for about 30 s; the limit leaves room for a loaded machine and a sanitized build.
set_tests_properties(bench_quick PROPERTIES LABELS "bench;integration" SKIP_RETURN_CODE 77
                     TIMEOUT 400 RUN_SERIAL TRUE)
# The hardware path with a made-up device (bench/bench_hw_path.py).
add_test(NAME bench_hw_path
  COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_hw_path.py
          ${CMAKE_BINARY_DIR}/bin "${UROCE_SANITIZE}" 28851 18851)
set_tests_properties(bench_hw_path PROPERTIES LABELS "bench;integration" SKIP_RETURN_CODE 77
                     TIMEOUT 300)
