# The start-up warning for a run of many epochs over its training data.
add_test(NAME train_epochs COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/train_epochs.sh
                                   $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/train_epochs)
set_tests_properties(train_epochs PROPERTIES LABELS integration TIMEOUT 120)

# End-to-end training of the tiny config on the bundled corpus, then sampling.
if(NOT TARGET gpt2_sample)
  return()
endif()
add_test(NAME train_tiny
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/train_tiny.sh
                 $<TARGET_FILE:gpt2_ddp> $<TARGET_FILE:gpt2_sample> ${CMAKE_CURRENT_BINARY_DIR}/train_tiny)
set_tests_properties(train_tiny PROPERTIES LABELS integration TIMEOUT 900)
