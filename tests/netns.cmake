# "Two hosts": unmodified programs between two network namespaces joined by a veth pair
# (netns/two-hosts.sh; root only, skipped with a message otherwise), IPv4, IPv6 and IPv6
# link-local GIDs (sent through the source address's interface), through
# nftables loss of single packets and of whole trains (an independent check of retransmission),
# with UROCE_FAULTS, and a capture that must decode in tshark and verify in scapy (GSO segments
# crossing a veth keep their ICRCs). Each loss costs a go-back-N round and often an ACK timeout
# (67 ms as the programs set it): the loss tests' sizes keep them to a few seconds, but for two
# 64 MiB transfers each way (losstrain: nftables loss of whole trains in the first 48 MiB; fault64m: UROCE_FAULTS
# loss, reordering, duplication and corruption on both hosts, sparing RC ACKs as the nftables
# rules do: ibv_rc_pingpong has no closing handshake, so a lost last ACK would find its peer
# gone). sbwfault loses about 5 % each way, as the perftest fault tests do (tests/shim.cmake
# says why not more).
# NAME|family|check|environment (space-separated, or -)|program and arguments
set(_two_hosts
  "rc4|4|bytes|-|ibv_rc_pingpong -n 200 -s 4096 -c"
  "rc64k|4|bytes|-|ibv_rc_pingpong -n 100 -s 65536 -m 1024 -c"
  "rc6|6|bytes|-|ibv_rc_pingpong -n 200 -s 4096 -c"
  "uc|4|bytes|-|ibv_uc_pingpong -n 100 -s 3000 -c"
  "ud|4|bytes|-|ibv_ud_pingpong -n 100 -s 1024 -c"
  "ud6|6|bytes|-|ibv_ud_pingpong -n 100 -s 1024 -c"
  "srq|4|bytes|-|ibv_srq_pingpong -n 50 -s 2048 -c"
  "xsrq|4|bytes|-|ibv_xsrq_pingpong -n 50 -s 10000"
  "cap|4|bytes|CAPTURE=1|ibv_rc_pingpong -n 20 -s 8192 -c"
  "cap6|6|bytes|CAPTURE=1|ibv_rc_pingpong -n 20 -s 8192 -c"
  "loss|4|bytes|LOSS=5|ibv_rc_pingpong -n 200 -s 65536 -c"
  "loss6|6|bytes|LOSS=5|ibv_rc_pingpong -n 100 -s 65536 -c"
  "losstrain|4|bytes|LOSS=5 TRAINS=1|ibv_rc_pingpong -n 1024 -s 65536 -c"
  "fault64m|4|bytes|FAULTS=loss=0.005,reorder=0.01,dup=0.005,corrupt=0.002,dir=both,spare=acks|ibv_rc_pingpong -n 1024 -s 65536 -c"
  "wbwloss|4|perftest|LOSS=5|ib_write_bw -n 300 -s 65536"
  "rbw6|6|perftest|-|ib_read_bw -n 300"
  "rcll|6ll|bytes|-|ibv_rc_pingpong -n 100 -s 65536 -c"
  "udll|6ll|bytes|-|ibv_ud_pingpong -n 50 -s 512 -c"
  "capll|6ll|bytes|CAPTURE=1|ibv_rc_pingpong -n 10 -s 8192 -c"
  "sbwfault|4|perftest|FAULTS=loss=0.02,reorder=0.02,dup=0.01,corrupt=0.005,dir=both|ib_send_bw -n 150"
  "rping|4|rdmacm|CAPTURE=1|rping -C 100 -S 4000 -V"
  "rping6only|6only|rdmacm|CAPTURE=1|rping -C 100 -S 4000 -V"
  "rpingloss|4|rdmacm|LOSS=5|rping -C 40 -S 4000 -V"
  "ucmatose|4|rdmacm|CAPTURE=1|ucmatose -c 4 -C 20"
  "ucmatose6|6only|rdmacm|-|ucmatose -c 2 -C 10"
  "udaddy|4|rdmacm|-|udaddy -c 2 -C 20"
  "cmtime|4|rdmacm|-|cmtime -c 100"
  "rdmaserver|4|rdmacm|-|rdma_server"
  "xrc|4|rdmacm|-|rdma_xserver -c x"
  "unreachable|4|unreachable|-|rping -C 1"
  "unreachable6|6|unreachable|-|rping -C 1"
  "silent|4|unreachable|SILENT=1|rping -C 1"
  "mcast|4|bytes|-|$<TARGET_FILE:mcast_peer> -n 200"
  "mcast6|6|bytes|CAPTURE=1|$<TARGET_FILE:mcast_peer> -n 200"
  "mckey|4|mckey|CAPTURE=1|mckey -C 50"
  "mckey6|6|mckey|-|mckey -C 50"
  "sendlat|4|perftest|-|ib_send_lat -n 300"
  "writelat|4|perftest|-|ib_write_lat -n 300"
  "readlat6|6|perftest|-|ib_read_lat -n 300"
  "atomiclat|4|perftest|-|ib_atomic_lat -n 300"
  "atomicbw|4|perftest|-|ib_atomic_bw -n 300"
  "sendbwcm|4|perftest|-|ib_send_bw -n 300 -R"
  "writebwcm|4|perftest|-|ib_write_bw -n 300 -R"
  "readbwcm|4|perftest|-|ib_read_bw -n 300 -R"
  "udsendbwcm|4|perftest|-|ib_send_bw -n 300 -c UD -R"
  "ucwritebw|4|perftest|-|ib_write_bw -n 300 -c UC"
  "xrcsendbw|4|perftest|-|ib_send_bw -n 300 -c XRC"
  "writebwbidir|4|perftest|-|ib_write_bw -n 300 -b"
  "ucevents|4|bytes|-|ibv_uc_pingpong -n 100 -s 1024 -e -c"
)
# UD multicast between the hosts (IP multicast over the veth): netns/mcast_peer.c.
add_executable(mcast_peer netns/mcast_peer.c)
target_link_libraries(mcast_peer PRIVATE uroce_ibverbs)
foreach(_entry IN LISTS _two_hosts)
  string(REPLACE "|" ";" _f "${_entry}")
  list(GET _f 0 _name)
  list(GET _f 1 _family)
  list(GET _f 2 _check)
  list(GET _f 3 _env)
  list(GET _f 4 _cmdline)
  separate_arguments(_cmd UNIX_COMMAND "${_cmdline}")
  add_test(NAME netns_${_name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/netns/two-hosts.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
            "${UROCE_SANITIZE}" ${_name} ${_family} ${_check} ${_cmd})
  set_tests_properties(netns_${_name} PROPERTIES LABELS "netns;integration" TIMEOUT 120
                       SKIP_RETURN_CODE 77)
  if(NOT _env STREQUAL "-")
    separate_arguments(_env UNIX_COMMAND "${_env}")
    set_tests_properties(netns_${_name} PROPERTIES ENVIRONMENT "${_env}")
  endif()
endforeach()

# Three "hosts" on a bridge, every pair talking at once (netns/three-hosts.sh).
add_test(NAME netns_three_hosts
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/netns/three-hosts.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          "${UROCE_SANITIZE}")
set_tests_properties(netns_three_hosts PROPERTIES LABELS "netns;integration" TIMEOUT 120
                     SKIP_RETURN_CODE 77)

# A tentative IPv6 address is no GID until duplicate address detection has passed.
add_test(NAME netns_tentative_gid
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/netns/tentative-gid.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          "${UROCE_SANITIZE}")
set_tests_properties(netns_tentative_gid PROPERTIES LABELS "netns;integration" TIMEOUT 60
                     SKIP_RETURN_CODE 77)
