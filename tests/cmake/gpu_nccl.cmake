# GPU area, NCCL data parallelism (tests/gpu/nccl_*.sh; label gpu): 2 and 4
# GPUs against one (losses, identical parameters on every rank), a rank
# killed or stopped ending the job within nccl_timeout_s, and checkpoints
# moving between 4, 2, 1 GPUs and the CPU backend. Each exits 77 (reported
# as skipped) with fewer GPUs than it needs; they need data/nlp-corpus.
if(GPT2_HAVE_NCCL)
  foreach(t nccl_equivalence nccl_abort nccl_ckpt)
    add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/gpu/${t}.sh
                               $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/${t})
    set_tests_properties(${t} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900 RUN_SERIAL TRUE)
  endforeach()
endif()
