# Model area: options of the model's orchestration (model/gpt2.c) on the CPU
# backend, where results are exact: recompute_gelu changes memory, not numbers.
add_executable(test_recompute_gelu ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_recompute_gelu.c)
target_link_libraries(test_recompute_gelu PRIVATE gpt2core)
target_compile_options(test_recompute_gelu PRIVATE -Wall -Wextra -Werror)
add_test(NAME test_recompute_gelu COMMAND test_recompute_gelu)
set_tests_properties(test_recompute_gelu PROPERTIES LABELS unit TIMEOUT 120)
