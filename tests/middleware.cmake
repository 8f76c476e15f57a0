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

# qperf -cm1, every RC test, runs in a row (middleware/qperf.sh): CI runs 1 on loopback and 1
# between namespaces; the label middleware-full runs 20 of each.
foreach(_entry "loopback|1|19811" "netns|1|19812" "loopback|20|19813|full" "netns|20|19814|full")
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _where)
  list(GET _f 1 _runs)
  list(GET _f 2 _port)
  list(LENGTH _f _n)
  if(_n EQUAL 4)
    set(_name qperf_cm_${_where}_full)
    set(_labels "middleware-full")
  else()
    set(_name qperf_cm_${_where})
    set(_labels "shim;integration")
  endif()
  add_test(NAME ${_name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/qperf.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_port} ${_runs} ${_where})
  set_tests_properties(${_name} PROPERTIES LABELS "${_labels}" TIMEOUT 900 SKIP_RETURN_CODE 77)
  if(_where STREQUAL "netns")
    set_property(TEST ${_name} APPEND PROPERTY LABELS netns)
  endif()
endforeach()
