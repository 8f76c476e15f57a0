# fabric: the network endpoint: configuration, QPN allocation, timers, the progress thread, the
# endpoint in one process, and several processes sharing the RoCEv2 port (helper program
# fabric_peer). Each test uses its own UDP port in 24800..24849 (UROCE_UDP_PORT), so that they
# run in parallel with each other and with the other areas' tests.
add_library(uroce_fabric_test STATIC fabric/common.c)
target_link_libraries(uroce_fabric_test PUBLIC uroce_fabric)
add_executable(fabric_peer fabric/peer.c)
target_link_libraries(fabric_peer PRIVATE uroce_fabric_test)

uroce_test(test_fabric_config SOURCES test_fabric_config.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_fabric_qpn SOURCES test_fabric_qpn.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_fabric_progress SOURCES test_fabric_progress.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_fabric_steer SOURCES test_fabric_steer.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_fabric_timer SOURCES test_fabric_timer.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_fabric_net SOURCES test_fabric_net.c LIBS uroce_fabric_test LABELS fabric)
uroce_test(test_fabric_rdv SOURCES test_fabric_rdv.c LIBS uroce_fabric_test LABELS fabric)
uroce_test(test_fabric_multi SOURCES test_fabric_multi.c LIBS uroce_fabric_test LABELS fabric)
foreach(t test_fabric_rdv test_fabric_multi)
  target_compile_definitions(${t} PRIVATE FABRIC_PEER="$<TARGET_FILE:fabric_peer>")
  add_dependencies(${t} fabric_peer)
endforeach()

# Threads against one endpoint, and a takeover into the tested process; no Criterion, so that
# it runs in the ThreadSanitizer tree too.
add_executable(fabric_stress fabric/stress.c)
target_link_libraries(fabric_stress PRIVATE uroce_fabric_test)
# Label tsan: what the ThreadSanitizer tree runs (Criterion cannot start under TSan here); also
# on the epoll backend.
add_test(NAME fabric_stress COMMAND fabric_stress $<TARGET_FILE:fabric_peer>)
add_test(NAME fabric_stress_epoll COMMAND fabric_stress $<TARGET_FILE:fabric_peer>)
set_tests_properties(fabric_stress fabric_stress_epoll PROPERTIES LABELS "fabric;tsan" TIMEOUT 120)
set_tests_properties(fabric_stress PROPERTIES ENVIRONMENT UROCE_UDP_PORT=24840)
set_tests_properties(fabric_stress_epoll PROPERTIES
                     ENVIRONMENT "UROCE_UDP_PORT=24841;UROCE_BACKEND=epoll")
