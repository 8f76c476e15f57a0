# The compatibility matrix (issue "Compatibility and speed"): rdma-core's examples, perftest and
# pyverbs, unmodified, over uroce. The whole matrix is `ctest -L compat-full`; the tests of
# shim.cmake and netns.cmake are part of it, and those below that carry the label compat-extra
# are left out of the default run (scripts/test.sh) to keep CI short.
# NAME|TCP or rdma_cm port|program and arguments; the UDP port is the first + 10000.

# rdma-core's pingpongs: CQ events (-e) and IPv6 GIDs (-g 1) for each transport.
set(_compat_pingpongs
  "uc_events|18680|ibv_uc_pingpong -d uroce_lo -g 0 -n 100 -s 1024 -e -c"
  "ud_events|18681|ibv_ud_pingpong -d uroce_lo -g 0 -n 100 -s 1024 -e -c"
  "srq_events|18682|ibv_srq_pingpong -d uroce_lo -g 0 -n 50 -q 4 -e -c"
  "uc_ipv6|18683|ibv_uc_pingpong -d uroce_lo -g 1 -n 100 -c"
  "ud_ipv6|18684|ibv_ud_pingpong -d uroce_lo -g 1 -n 100 -c"
  "srq_ipv6|18685|ibv_srq_pingpong -d uroce_lo -g 1 -n 50 -c"
  "rc_events_ipv6|18686|ibv_rc_pingpong -d uroce_lo -g 1 -n 100 -e -c"
  "xsrq_ipv6|18687|ibv_xsrq_pingpong -d uroce_lo -g 1 -n 20"
)
uroce_two_process_tests(compat_pingpong shim/pingpong.sh "${_compat_pingpongs}")

# perftest: every program with -R (connected by the rdma_cm; UD through SIDR), all sizes (-a),
# bidirectional (-b), UC, UD and XRC latency, inline sends (-I), CQ events (-e).
set(_compat_perftests
  "send_bw_cm|18690|ib_send_bw -d uroce_lo -x 0 -n 300 -R"
  "write_bw_cm|18691|ib_write_bw -d uroce_lo -x 0 -n 300 -R"
  "read_bw_cm|18692|ib_read_bw -d uroce_lo -x 0 -n 300 -R"
  "atomic_bw_cm|18693|ib_atomic_bw -d uroce_lo -x 0 -n 300 -R"
  "send_lat_cm|18694|ib_send_lat -d uroce_lo -x 0 -n 300 -R"
  "write_lat_cm|18695|ib_write_lat -d uroce_lo -x 0 -n 300 -R"
  "read_lat_cm|18696|ib_read_lat -d uroce_lo -x 0 -n 300 -R"
  "atomic_lat_cm|18697|ib_atomic_lat -d uroce_lo -x 0 -n 300 -R"
  "ud_send_bw_cm|18698|ib_send_bw -d uroce_lo -x 0 -n 300 -c UD -R"
  "ud_send_lat_cm|18699|ib_send_lat -d uroce_lo -x 0 -n 300 -c UD -R"
  "write_bw_bidir_cm|18700|ib_write_bw -d uroce_lo -x 0 -n 300 -b -R"
  "send_lat_sizes|18701|ib_send_lat -d uroce_lo -x 0 -n 20 -a"
  "write_lat_sizes|18702|ib_write_lat -d uroce_lo -x 0 -n 20 -a"
  "read_lat_sizes|18703|ib_read_lat -d uroce_lo -x 0 -n 20 -a"
  "read_bw_sizes|18704|ib_read_bw -d uroce_lo -x 0 -n 20 -a"
  "send_bw_sizes|18705|ib_send_bw -d uroce_lo -x 0 -n 20 -a"
  "write_bw_bidir|18706|ib_write_bw -d uroce_lo -x 0 -n 300 -b"
  "read_bw_bidir|18707|ib_read_bw -d uroce_lo -x 0 -n 300 -b"
  "atomic_bw_bidir|18708|ib_atomic_bw -d uroce_lo -x 0 -n 300 -b"
  "uc_send_lat|18709|ib_send_lat -d uroce_lo -x 0 -n 300 -c UC"
  "ud_send_lat|18710|ib_send_lat -d uroce_lo -x 0 -n 300 -c UD"
  "uc_write_lat|18711|ib_write_lat -d uroce_lo -x 0 -n 300 -c UC"
  "uc_send_bw|18712|ib_send_bw -d uroce_lo -x 0 -n 100 -c UC"
  "xrc_write_bw|18713|ib_write_bw -d uroce_lo -x 0 -n 300 -c XRC"
  "xrc_send_lat|18714|ib_send_lat -d uroce_lo -x 0 -n 300 -c XRC"
  "send_lat_inline|18715|ib_send_lat -d uroce_lo -x 0 -n 300 -s 200 -I 220"
  "write_bw_inline|18716|ib_write_bw -d uroce_lo -x 0 -n 300 -s 64 -I 64"
  "atomic_bw_fadd|18717|ib_atomic_bw -d uroce_lo -x 0 -n 300 -A FETCH_AND_ADD"
  "ud_send_bw_sizes|18718|ib_send_bw -d uroce_lo -x 0 -n 20 -c UD -a"
  "write_bw_8qp_cm|18719|ib_write_bw -d uroce_lo -x 0 -n 300 -q 8 -R"
  "read_bw_outs|18720|ib_read_bw -d uroce_lo -x 0 -n 300 -o 16"
  "send_bw_events|18721|ib_send_bw -d uroce_lo -x 0 -n 300 -e"
  "send_bw_mtu4k|18722|ib_send_bw -d uroce_lo -x 0 -n 100 -s 65536 -m 4096"
)
uroce_two_process_tests(compat_perftest shim/perftest.sh "${_compat_perftests}")

# pyverbs: a program of our own opens a device, registers memory, creates a CQ and QPs, moves
# them through their states and moves data (shim/pyverbs-qp.py).
add_test(NAME compat_pyverbs_qp
  COMMAND ${CMAKE_BINARY_DIR}/bin/uroce-run /usr/bin/python3
          ${CMAKE_CURRENT_SOURCE_DIR}/shim/pyverbs-qp.py)
set_tests_properties(compat_pyverbs_qp PROPERTIES LABELS "shim;integration" TIMEOUT 60
                     ENVIRONMENT UROCE_UDP_PORT=28723 PASS_REGULAR_EXPRESSION "^pyverbs: RC QPs")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(compat_pyverbs_qp PROPERTIES DISABLED TRUE)
endif()

# The CI subset of the tests above: one of each kind; the rest carry compat-extra. perftest -R's
# client connects the test QP right after a handshake that its server follows with the
# rdma_listen for it: the host holds that request for the listen (fabric/rdv_int.h), and the
# two -R latency programs here, RC and UD (SIDR), check it.
set(_compat_ci compat_pingpong_ud_events compat_pingpong_rc_events_ipv6
    compat_perftest_read_lat_sizes compat_perftest_write_bw_bidir compat_perftest_uc_send_lat
    compat_perftest_send_lat_inline compat_pyverbs_qp compat_perftest_send_lat_cm
    compat_perftest_ud_send_lat_cm)
get_property(_all DIRECTORY PROPERTY TESTS)
foreach(_t IN LISTS _all)
  if(_t MATCHES "^((pingpong|perftest|rdmacm|compat|netns)_|shim_programs$)")
    get_test_property(${_t} LABELS _labels)
    if((_t MATCHES "^compat_" AND NOT _t IN_LIST _compat_ci) OR _t MATCHES "^netns_.*cm$")
      list(APPEND _labels compat-extra)
    else()
      list(APPEND _labels compat)
    endif()
    set_tests_properties(${_t} PROPERTIES LABELS "${_labels};compat-full")
  endif()
endforeach()
