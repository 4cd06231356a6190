# Checkpoints on MPI ranks (CPU backend): exact resume and pre-emption,
# resume on other rank counts, crash safety, damaged checkpoints, and files
# read by others (h5py, PyTorch, llm.c). Unit: the directory protocol and
# the llm.c model file.
set(CKPT_TESTS ckpt_resume ckpt_reshard ckpt_crash ckpt_damage)
foreach(t ${CKPT_TESTS})
  add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/${t}.sh
                             $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/${t})
endforeach()
add_test(NAME ckpt_interchange
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/ckpt_interchange.sh $<TARGET_FILE:gpt2_ddp>
                 $<TARGET_FILE:gpt2_convert> ${CMAKE_CURRENT_BINARY_DIR}/ckpt_interchange)
set_tests_properties(${CKPT_TESTS} ckpt_interchange
                     PROPERTIES LABELS integration TIMEOUT 600 RUN_SERIAL TRUE)

gpt2_unit_test(test_ckpt_files 0 ${PROJECT_SOURCE_DIR}/tests/unit/test_ckpt_files.c)
