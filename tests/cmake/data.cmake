# Data area: llm.c token shards, the dataset over a glob, the per-rank loader.
foreach(name test_shard test_loader)
  gpt2_unit_test(${name} 60 ${CMAKE_CURRENT_SOURCE_DIR}/unit/${name}.c)
endforeach()
