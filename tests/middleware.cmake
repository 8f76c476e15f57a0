# The RDMA middleware over uroce, unmodified (issue "The RDMA middleware runs on uroce
# unmodified"): UCX's ucx_perftest between two processes on loopback and between two network
# namespaces, with UCX's defaults but the transports (UCX sets RC up through UD). Each test has
# a TCP port (18900 and up; its UDP port is 10000 more). Every middleware test has the label
# middleware (`ctest -L middleware`: the whole matrix); those CI leaves out also have the label
# middleware-full (scripts/test.sh). CI runs the UCX tests named in _ucx_ci.
# The labels of middleware test NAME into OUT: CI's ("shim;integration;middleware") if NAME is
# in the list CI, else "middleware;middleware-full"; "netns" too where WHERE is netns.
function(_middleware_labels out name ci where)
  if(name IN_LIST ci)
    set(labels "shim;integration;middleware")
  else()
    set(labels "middleware;middleware-full")
  endif()
  if(where STREQUAL "netns")
    list(APPEND labels netns)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

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
      _middleware_labels(_labels ${_name} "${_ucx_ci}" ${_where})
      set_tests_properties(${_name} PROPERTIES LABELS "${_labels}" TIMEOUT 120
                           SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "Final:")
      math(EXPR _ucx_port "${_ucx_port} + 1")
    endforeach()
  endforeach()
endforeach()

# qperf -cm1, every RC test, runs in a row (middleware/qperf.sh): CI runs 1 on loopback and 1
# between namespaces; the full matrix 20 of each too.
foreach(_entry "loopback|1|19811" "netns|1|19812" "loopback|20|19813|full" "netns|20|19814|full")
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _where)
  list(GET _f 1 _runs)
  list(GET _f 2 _port)
  list(LENGTH _f _n)
  if(_n EQUAL 4)
    set(_name qperf_cm_${_where}_full)
    set(_labels "middleware;middleware-full")
  else()
    set(_name qperf_cm_${_where})
    set(_labels "shim;integration;middleware")
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
    set(_labels "shim;integration;middleware")
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

# fi_info -p verbs lists MSG, RDM (verbs;ofi_rxm) and DGRAM endpoints for each uroce device
# with an address, DGRAM only for the loopback device (middleware/fi-info.sh, a namespace with
# subnets 10.204.46 and .47).
add_test(NAME fi_info_endpoints
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/fi-info.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          "${UROCE_SANITIZE}")
set_tests_properties(fi_info_endpoints PROPERTIES LABELS "shim;integration;middleware;netns" TIMEOUT 60
                     SKIP_RETURN_CODE 77)

# MPI with a program of our own (middleware/mpi.sh, tools/bench/mpi_check.c): Open MPI over
# UCX (pml ucx) and over libfabric (pml cm, mtl ofi, verbs;ofi_rxm), 2 and 4 ranks, on one
# host and between two namespace hosts; MPICH (Debian's is ch4:ucx) over UCX likewise (on one
# host its ranks run on two "hosts" that differ in name only: MPICH keeps the ranks of one host
# on shared memory). Each test's UDP port is its entry's number plus
# 10000; a netns test's subnet is 10.204.(number - 18876). CI runs those in _mpi_ci.
set(_mpi_ci mpi_openmpi_ucx_np2_netns mpi_openmpi_ofi_np2_netns mpi_mpich_ucx_np2_netns)
foreach(_entry "openmpi|ucx|2|loopback|18926" "openmpi|ucx|4|loopback|18927"
               "openmpi|ofi|2|loopback|18928" "openmpi|ofi|4|loopback|18929"
               "openmpi|ucx|2|netns|18930" "openmpi|ucx|4|netns|18931"
               "openmpi|ofi|2|netns|18932" "openmpi|ofi|4|netns|18933"
               "mpich|ucx|2|netns|18934" "mpich|ucx|4|netns|18935"
               "mpich|ucx|2|loopback|18936" "mpich|ucx|4|loopback|18937")
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _impl)
  list(GET _f 1 _path)
  list(GET _f 2 _np)
  list(GET _f 3 _where)
  list(GET _f 4 _port)
  math(EXPR _udp "${_port} + 10000")
  math(EXPR _net "${_port} - 18876")
  set(_name mpi_${_impl}_${_path}_np${_np})
  if(_where STREQUAL "netns")
    set(_name ${_name}_netns)
  endif()
  add_test(NAME ${_name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/middleware/mpi.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_impl} ${_path} ${_np} ${_where} ${_net})
  _middleware_labels(_labels ${_name} "${_mpi_ci}" ${_where})
  set_tests_properties(${_name} PROPERTIES LABELS "${_labels}"
                       TIMEOUT 150 SKIP_RETURN_CODE 77 ENVIRONMENT "UROCE_UDP_PORT=${_udp}")
endforeach()
