# Live view (issue 8): a running program's frames in tshark as they come -- tshark -i FIFO on a
# FIFO named by UROCE_PCAP (live/fifo.sh), uroce-run --pcap - piped into tshark -i -
# (live/stdout.sh), and a FIFO nobody reads, which must not hold the program up
# (live/no-reader.sh). NAME|TCP port|UDP port (UROCE_UDP_PORT) of each.
set(_live_tests
  "fifo|18830|28830"
  "stdout|18831|28831"
  "no-reader|18832|28832")
foreach(_entry IN LISTS _live_tests)
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _script)
  list(GET _f 1 _tcp)
  list(GET _f 2 _udp)
  string(REPLACE "-" "_" _name "live_${_script}")
  add_test(NAME ${_name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/live/${_script}.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_tcp} ${_udp})
  # A few seconds each; the limit leaves room for a loaded machine and a sanitized build.
  set_tests_properties(${_name} PROPERTIES LABELS "live;integration" TIMEOUT 60
                       SKIP_RETURN_CODE 77)
endforeach()
