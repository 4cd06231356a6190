# Data area: llm.c token shards, the dataset over a glob, the per-rank loader.
foreach(name test_shard test_loader)
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/unit/${name}.c)
  target_link_libraries(${name} PRIVATE gpt2core)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Werror)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
