# Run safety (issue 13) on MPI ranks (CPU backend): one job per run
# directory, the non-finite guard, stopping without signals (STOP file,
# time_limit_min), a full disk, rank-count-independent validation, init_from
# read once. GPU parts (label gpu): the memory pre-flight, the guard on the
# GPU backend, pre-emption through launch/local.sh with the local mpirun.
set(SAFETY_TESTS safety_lock safety_val_ranks safety_nonfinite safety_stop safety_disk_full)
foreach(t ${SAFETY_TESTS})
  add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/${t}.sh
                             $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/${t})
endforeach()
add_test(NAME safety_init_from
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/safety_init_from.sh $<TARGET_FILE:gpt2_ddp>
                 ${CMAKE_CURRENT_BINARY_DIR}/safety_init_from ${GPT2_HAVE_NCCL} "${NCCL_VERSION_TEXT}"
                 ${GPT2_HAVE_TOKENIZER})
set_tests_properties(${SAFETY_TESTS} safety_init_from
                     PROPERTIES LABELS integration TIMEOUT 600 RUN_SERIAL TRUE)

gpt2_unit_test(test_run_safety 120 ${PROJECT_SOURCE_DIR}/tests/unit/test_run_safety.c)
