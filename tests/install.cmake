# Installation and uroce-run (issue "Compatibility and speed"): cmake --install lays the drop-in
# libraries in a folder of their own and a user's program builds against the installation with
# pkg-config and with find_package (install/install-tree.sh); uroce-run's options
# (install/uroce-run-options.sh).
add_test(NAME install_tree
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/install-tree.sh ${CMAKE_BINARY_DIR}
          ${PROJECT_SOURCE_DIR} "${UROCE_SANITIZE}")
add_test(NAME uroce_run_options
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/uroce-run-options.sh ${CMAKE_BINARY_DIR}/bin/uroce-run
          "${UROCE_SANITIZE}")
set_tests_properties(install_tree uroce_run_options PROPERTIES LABELS "install;integration"
                     SKIP_RETURN_CODE 77 ENVIRONMENT UROCE_UDP_PORT=28724)
# Both take a few seconds; the limits leave room for a loaded machine and a sanitized build.
set_tests_properties(install_tree PROPERTIES TIMEOUT 60)
set_tests_properties(uroce_run_options PROPERTIES TIMEOUT 30)
