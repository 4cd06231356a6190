# Data parallelism on MPI ranks (CPU backend): equivalence across rank counts,
# overlap of bucket reduction with backward, memory per rank, failure of one rank.
set(DDP_TESTS ddp_equivalence ddp_overlap ddp_abort)
foreach(t ${DDP_TESTS})
  add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/${t}.sh
                             $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/${t})
  set_tests_properties(${t} PROPERTIES LABELS integration TIMEOUT 900 RUN_SERIAL TRUE)
endforeach()
add_test(NAME ddp_memory COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/ddp_memory.sh $<TARGET_FILE:gpt2_ddp>)
set_tests_properties(ddp_memory PROPERTIES LABELS integration TIMEOUT 120)

gpt2_unit_test(test_zero 0 ${PROJECT_SOURCE_DIR}/tests/unit/test_zero.c)
