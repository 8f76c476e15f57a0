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
                     ENVIRONMENT UROCE_UDP_PORT=28727 PASS_REGULAR_EXPRESSION "discovery: consistent")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(discovery_consistent PROPERTIES DISABLED TRUE)
endif()

# rdma-core's own rdma_cm tests (python3-pyverbs' test_rdmacm.py), unmodified: every one runs
# and passes (none skipped). They find their device's netdev through the view; two processes
# each, and they use rdma_cm port 7471, so a RoCE port of their own.
add_test(NAME discovery_pyverbs_rdmacm
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery/pyverbs-rdmacm.sh ${CMAKE_BINARY_DIR}/bin/uroce-run)
set_tests_properties(discovery_pyverbs_rdmacm PROPERTIES LABELS "shim;integration" TIMEOUT 360
                     ENVIRONMENT UROCE_UDP_PORT=28725
                     PASS_REGULAR_EXPRESSION "pyverbs-rdmacm.sh: all [0-9]+ tests of")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(discovery_pyverbs_rdmacm PROPERTIES DISABLED TRUE)
endif()

# RDMA netlink for the same devices (verbs-shim/nldev.h), pure: rxe's answers byte for byte,
# the kernel's errors, malformed requests answered and counted.
uroce_test(test_nldev SOURCES test_nldev.c $<TARGET_OBJECTS:uroce_nldev> LABELS "shim")
target_include_directories(test_nldev PRIVATE ${IBVERBS_INCLUDE_DIRS})
target_compile_definitions(test_nldev PRIVATE UROCE_VERSION="${PROJECT_VERSION}")

# The resource registry (verbs-shim/resreg.h) that RES_GET and RES_QP_GET read: files made and
# removed with the objects, killed processes and reused pids skipped and cleaned up, fork,
# torn records, no folder.
uroce_test(test_resreg SOURCES test_resreg.c ${PROJECT_SOURCE_DIR}/verbs-shim/resreg.c
  $<TARGET_OBJECTS:uroce_resreg_read> LIBS Threads::Threads LABELS "shim")
target_include_directories(test_resreg PRIVATE ${IBVERBS_INCLUDE_DIRS})

# Under uroce-run: rdma dev/link/res/system show list every device with rxe's fields, as sysfs
# holds them; the socket from Python (netlink.py, with pyverbs for the resource counts); ip's
# output (NETLINK_ROUTE) unchanged.
add_test(NAME discovery_netlink
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery/netlink.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          ${CMAKE_CURRENT_SOURCE_DIR}/discovery/rxe-reference.txt)
set_tests_properties(discovery_netlink PROPERTIES LABELS "shim;integration" TIMEOUT 120
                     ENVIRONMENT UROCE_UDP_PORT=28726 PASS_REGULAR_EXPRESSION "^netlink.sh: rdma lists every uroce device")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(discovery_netlink PROPERTIES DISABLED TRUE)
endif()

# Under uroce-run, in a network namespace of its own: `rdma res show qp` (and -j, and one QP by
# number) lists the QPs of three waiting pingpong servers with rxe's fields, the numbers they
# print and their pids; `rdma res show` counts their objects; a SIGKILLed one's file is skipped
# and removed, the others' go when they exit (res.sh).
add_test(NAME discovery_res
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery/res.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          ${CMAKE_CURRENT_SOURCE_DIR}/discovery/rxe-reference.txt)
set_tests_properties(discovery_res PROPERTIES LABELS "shim;integration" TIMEOUT 120
                     ENVIRONMENT UROCE_UDP_PORT=29330 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "res.sh: rdma res show lists every process")
if(UROCE_SANITIZE STREQUAL "thread")
  set_tests_properties(discovery_res PROPERTIES DISABLED TRUE)
endif()

# In a Docker container by default: Docker's capabilities and the refusals of its default
# seccomp profile (io_uring, namespaces, mounts, clone3: support/docker_seccomp.c). The devices
# are found and the data path runs (on epoll), with nothing but uroce-run.
add_executable(docker_seccomp support/docker_seccomp.c)
add_test(NAME discovery_docker
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/discovery/docker.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          $<TARGET_FILE:docker_seccomp> "${UROCE_SANITIZE}")
set_tests_properties(discovery_docker PROPERTIES LABELS "shim;integration" TIMEOUT 180
                     ENVIRONMENT UROCE_UDP_PORT=28728 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "docker.sh: under Docker's default")
