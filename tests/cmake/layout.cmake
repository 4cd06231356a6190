# Layout area: the source tree keeps its layering (docs/source-layout.md):
# every include and every room library's links within the table.
add_test(NAME layering
         COMMAND ${PYTHON3_SYSTEM} ${CMAKE_CURRENT_SOURCE_DIR}/layout/check_layering.py
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES LABELS unit TIMEOUT 60)
