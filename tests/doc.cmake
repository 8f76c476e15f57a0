# The README's doc test (issue 8): every command of README.md run as written, by the rules in
# doc/readme_commands.py (paths made the tree under test's, servers in the background, the
# commands it cannot run listed with a reason and a check in their place), in a network namespace
# of its own where one can be made. In a release tree only: the README's commands are
# build/release's. doc_readme_catches_rot proves that a rotten README fails it.
set(_doc_test ${CMAKE_CURRENT_SOURCE_DIR}/doc/readme_commands.py)
add_test(NAME doc_readme
  COMMAND /usr/bin/python3 ${_doc_test} ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}
          "${UROCE_SANITIZE}" "${CMAKE_BUILD_TYPE}")
add_test(NAME doc_readme_catches_rot
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/doc/catches-rot.sh ${_doc_test} ${CMAKE_BINARY_DIR})
# About 10 s (two installs, pingpongs, rping, tshark); room for a loaded machine.
set_tests_properties(doc_readme doc_readme_catches_rot PROPERTIES LABELS "doc" TIMEOUT 180
                     SKIP_RETURN_CODE 77 ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
