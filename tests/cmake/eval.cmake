# Eval area: what users watch while training. HellaSwag scored by the trainer
# (2 CPU ranks) and by gpt2_eval against PyTorch float64 per example
# (hellaswag_parity, reference) and on the GPU backend (hellaswag_parity_cuda,
# label gpu, exits 77 without a GPU); malformed HellaSwag files and bad
# gpt2_eval arguments exit 2 naming the line (hellaswag_errors); samples
# during training, the same for any rank count and equal to gpt2_sample's
# (train_samples); tools/plot_run.py (plot_run); the ETA arithmetic (test_eta).
gpt2_unit_test(test_eta 0 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_eta.c)

if(NOT TARGET gpt2_eval)
  return() # built without PCRE2/json-c: no tokenizer, no HellaSwag or samples
endif()
set(hellaswag_parity ${CMAKE_CURRENT_SOURCE_DIR}/reference/test_hellaswag_parity.py)
add_test(NAME hellaswag_parity
         COMMAND ${PYTHON3_SYSTEM} ${hellaswag_parity} $<TARGET_FILE:gpt2_ddp>
                 $<TARGET_FILE:gpt2_eval> ${CMAKE_CURRENT_BINARY_DIR}/hellaswag_parity)
set_tests_properties(hellaswag_parity PROPERTIES LABELS reference TIMEOUT 600)
if(GPT2_HAVE_CUDA)
  # The GPU machines' python3 with torch comes first on PATH there.
  find_program(PYTHON3_ON_PATH python3)
  add_test(NAME hellaswag_parity_cuda
           COMMAND ${PYTHON3_ON_PATH} ${hellaswag_parity} $<TARGET_FILE:gpt2_ddp>
                   $<TARGET_FILE:gpt2_eval> ${CMAKE_CURRENT_BINARY_DIR}/hellaswag_parity_cuda
                   --device cuda)
  set_tests_properties(hellaswag_parity_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()

add_test(NAME hellaswag_errors
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/hellaswag_errors.sh $<TARGET_FILE:gpt2_ddp>
                 $<TARGET_FILE:gpt2_eval> ${CMAKE_CURRENT_BINARY_DIR}/hellaswag_errors)
add_test(NAME train_samples
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/train_samples.sh $<TARGET_FILE:gpt2_ddp>
                 $<TARGET_FILE:gpt2_sample> ${CMAKE_CURRENT_BINARY_DIR}/train_samples)
add_test(NAME plot_run
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/plot_run.sh $<TARGET_FILE:gpt2_ddp>
                 ${CMAKE_CURRENT_BINARY_DIR}/plot_run)
set_tests_properties(hellaswag_errors train_samples plot_run PROPERTIES LABELS integration TIMEOUT 600)
