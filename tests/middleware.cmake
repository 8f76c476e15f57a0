# The RDMA middleware over uroce, unmodified (issue "The RDMA middleware runs on uroce
# unmodified"): UCX's ucx_perftest between two processes on loopback, UCX's defaults but the
# transports (UCX sets RC up through UD). NAME|TCP port|UCX_TLS|test
foreach(_entry
    "ud_tag_lat|18780|ud_verbs,self|tag_lat"
    "rc_ud_tag_lat|18781|rc_verbs,ud_verbs,self|tag_lat")
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _name)
  list(GET _f 1 _port)
  list(GET _f 2 _tls)
  list(GET _f 3 _test)
  add_test(NAME ucx_perftest_${_name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/ucx-perftest.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_port} ${_tls} ${_test})
  set_tests_properties(ucx_perftest_${_name} PROPERTIES LABELS "shim;integration" TIMEOUT 120
                       SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "Final:")
endforeach()
