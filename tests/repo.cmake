# Repository rules: layering and formatting, and proofs that the layering check can fail
# (between folders, and between the modules of a folder).
add_test(NAME repo_layers COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-layers ${PROJECT_SOURCE_DIR})
add_test(NAME repo_layers_catches_violations
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/repo/layers_negative.sh ${PROJECT_SOURCE_DIR}/scripts/check-layers)
add_test(NAME repo_modules_catches_violations
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/repo/modules_negative.sh ${PROJECT_SOURCE_DIR}/scripts/check-layers
          ${PROJECT_SOURCE_DIR})
set_tests_properties(repo_layers repo_layers_catches_violations repo_modules_catches_violations PROPERTIES LABELS "repo" TIMEOUT 60)
