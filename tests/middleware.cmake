# The RDMA middleware over uroce, unmodified (issue "The RDMA middleware runs on uroce
# unmodified"): UCX's ucx_perftest between two processes on loopback and between two network
# namespaces, with UCX's defaults but the transports (UCX sets RC up through UD). Each test has
# a TCP port (18900 and up; its UDP port is 10000 more). CI runs the tests named in _ucx_ci;
# the label middleware-full runs them all.
set(_ucx_ci ucx_perftest_ud_tag_lat ucx_perftest_rc_ud_tag_lat ucx_perftest_ud_ucp_put_bw
    ucx_perftest_rc_ud_tag_bw ucx_perftest_ud_tag_lat_netns ucx_perftest_rc_ud_tag_bw_netns)
set(_ucx_port 18900)
foreach(_where loopback netns)
  foreach(_tls "ud|ud_verbs,self" "rc_ud|rc_verbs,ud_verbs,self")
    string(REPLACE "|" ";" _f "${_tls}")
    list(GET _f 0 _tname)
    list(GET _f 1 _tlist)
    foreach(_test tag_lat tag_bw ucp_put_bw ucp_get stream_bw)
      set(_name ucx_perftest_${_tname}_${_test})
      if(_where STREQUAL "netns")
        set(_name ${_name}_netns)
      endif()
      math(EXPR _net "${_ucx_port} - 18900 + 10")
      add_test(NAME ${_name}
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/ucx-perftest.sh
                ${CMAKE_BINARY_DIR}/bin/uroce-run "${UROCE_SANITIZE}" ${_ucx_port} ${_tlist}
                ${_test} ${_where} ${_net})
      if(_name IN_LIST _ucx_ci)
        set(_labels "shim;integration")
      else()
        set(_labels "middleware-full")
      endif()
      if(_where STREQUAL "netns")
        list(APPEND _labels netns)
      endif()
      set_tests_properties(${_name} PROPERTIES LABELS "${_labels}" TIMEOUT 120
                           SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "Final:")
      math(EXPR _ucx_port "${_ucx_port} + 1")
    endforeach()
  endforeach()
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

# libfabric's fi_pingpong over its verbs provider (middleware/fi-pingpong.sh), with libfabric's
# defaults: DGRAM (UD), MSG (RC through rdma_cm) and RDM through ofi_rxm, on one host and between
# namespaces (TCP ports 18920-18925).
set(_fi_port 18920)
foreach(_where loopback netns)
  foreach(_ep "dgram|verbs" "msg|verbs" "rdm|verbs\\;ofi_rxm")
    string(REPLACE "|" ";" _f "${_ep}")
    list(GET _f 0 _type)
    list(GET _f 1 _prov)
    set(_name fi_pingpong_${_type})
    set(_labels "shim;integration")
    if(_where STREQUAL "netns")
      set(_name ${_name}_netns)
      list(APPEND _labels netns)
    endif()
    math(EXPR _net "${_fi_port} - 18920 + 40")
    add_test(NAME ${_name}
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/fi-pingpong.sh
              ${CMAKE_BINARY_DIR}/bin/uroce-run "${UROCE_SANITIZE}" ${_fi_port} "${_prov}"
              ${_type} ${_where} ${_net})
    set_tests_properties(${_name} PROPERTIES LABELS "${_labels}" TIMEOUT 150
                         SKIP_RETURN_CODE 77)
    math(EXPR _fi_port "${_fi_port} + 1")
  endforeach()
endforeach()

# Open MPI with an MPI program of our own (middleware/mpi.sh, mpi_check.c), 2 and 4 ranks on one
# host, over UCX (pml ucx) and over libfabric (pml cm, mtl ofi, verbs;ofi_rxm); label
# middleware-full. (Between namespaces, and MPICH, which keeps local ranks on shared memory: not
# yet.)
foreach(_entry "ucx|2|18926" "ucx|4|18927" "ofi|2|18928" "ofi|4|18929")
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _path)
  list(GET _f 1 _np)
  list(GET _f 2 _port)
  math(EXPR _udp "${_port} + 10000")
  add_test(NAME mpi_openmpi_${_path}_np${_np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/mpi.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_path} ${_np})
  set_tests_properties(mpi_openmpi_${_path}_np${_np} PROPERTIES LABELS "middleware-full"
                       TIMEOUT 150 SKIP_RETURN_CODE 77 ENVIRONMENT "UROCE_UDP_PORT=${_udp}")
endforeach()
