# Slurm: a real cluster on this machine (Debian's slurm-wlm and munge),
# started and stopped by each test (tests/slurm/cluster.sh); launch/slurm.sbatch
# on the CPU backend: a run ending with a checkpoint, pre-emption -> requeue ->
# resume, srun vs mpirun, and two nodes made of network namespaces. Skipped
# (exit 77) without slurm-wlm/munge, root, or (two nodes) network namespaces.
set(SLURM_TESTS slurm_sbatch slurm_preempt slurm_launchers slurm_two_nodes slurm_time_limit)
foreach(t ${SLURM_TESTS})
  add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/slurm/${t}.sh
                             $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/${t})
  set_tests_properties(${t} PROPERTIES LABELS "integration;slurm" TIMEOUT 400 RUN_SERIAL TRUE
                                       SKIP_RETURN_CODE 77)
endforeach()
