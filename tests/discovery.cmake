# The kernel's view of uroce devices (issue "Discoverable where RDMA software looks"): the pure
# tree (test_sysview.c) and, through uroce-run, what programs see (discovery/*.sh).
uroce_test(test_sysview SOURCES test_sysview.c $<TARGET_OBJECTS:uroce_sysview>
  LABELS "shim")
target_include_directories(test_sysview PRIVATE ${IBVERBS_INCLUDE_DIRS})

# Under uroce-run: each folder as rxe's (less and plus what sysview.h says), the device nodes,
# the netdevs, paths outside the view untouched, UCX's devices.
add_test(NAME discovery_tree
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery/tree.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          ${CMAKE_CURRENT_SOURCE_DIR}/discovery/rxe-reference.txt)
set_tests_properties(discovery_tree PROPERTIES LABELS "shim;integration" TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "^tree.sh: the view matches")

# The view agrees with the verbs (pyverbs): GUIDs, port state, every GID, its type and netdev.
add_test(NAME discovery_consistent
  COMMAND ${CMAKE_BINARY_DIR}/bin/uroce-run /usr/bin/python3
          ${CMAKE_CURRENT_SOURCE_DIR}/discovery/consistent.py)
set_tests_properties(discovery_consistent PROPERTIES LABELS "shim;integration" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "discovery: consistent")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(discovery_consistent PROPERTIES DISABLED TRUE)
endif()
