# Config area: the real gpt2_ddp binary on good and bad configurations.
# Every error must end the job with exit code 2 and a message naming the key
# and the value (and file:line for .ini lines); under mpirun every rank exits
# and rank 0 alone prints. Checks run through integration/config_expect.sh.
set(config_expect ${CMAKE_CURRENT_SOURCE_DIR}/integration/config_expect.sh)
set(config_tiny ${PROJECT_SOURCE_DIR}/configs/tiny.ini)
set(config_syntax ${CMAKE_CURRENT_SOURCE_DIR}/integration/config_syntax.ini)
set(config_cases ${CMAKE_CURRENT_BINARY_DIR}/config_cases)
set(config_mpirun ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe ${MPIEXEC_NUMPROC_FLAG} 2)

# config_test(NAME RC [INI line...] [MPI] ARGS arg... [STDERR ere...]
#             [STDOUT ere...] [ONCE ere])
# Runs gpt2_ddp ARGS (under mpirun -np 2 with MPI) and expects exit code RC
# and lines matching each regex. INI lines are written to config_cases/NAME.ini
# at configure time; @INI@ in ARGS stands for that file. Regexes use '.'
# for ';' and for an unbalanced '[' (both change how CMake splits lists), and
# INI has no empty lines (CMake drops empty list elements).
function(config_test name rc)
  cmake_parse_arguments(arg "MPI" "ONCE" "INI;ARGS;STDERR;STDOUT" ${ARGN})
  set(ini ${config_cases}/${name}.ini)
  if(arg_INI)
    string(JOIN "\n" text ${arg_INI})
    file(WRITE ${ini} "${text}\n")
  endif()
  list(TRANSFORM arg_ARGS REPLACE "@INI@" ${ini})
  set(checks)
  foreach(re ${arg_STDERR})
    list(APPEND checks --stderr ${re})
  endforeach()
  foreach(re ${arg_STDOUT})
    list(APPEND checks --stdout ${re})
  endforeach()
  if(arg_ONCE)
    list(APPEND checks --once ${arg_ONCE})
  endif()
  if(NOT rc EQUAL 0)
    list(APPEND checks --quiet) # an error prints no config
  endif()
  set(launcher)
  if(arg_MPI)
    set(launcher ${config_mpirun})
  endif()
  add_test(NAME config.${name}
    COMMAND sh ${config_expect} ${rc} ${checks} -- ${launcher} $<TARGET_FILE:gpt2_ddp> ${arg_ARGS}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(config.${name} PROPERTIES LABELS integration TIMEOUT 60)
endfunction()

# ---- .ini errors: file:line, key and value in the message
config_test(unknown_key 2
  INI "[model]" "n_layer = 2" "n_layers = 4"
  ARGS @INI@
  STDERR "unknown_key\\.ini:3: n_layers = 4: unknown key \\(did you mean 'n_layer'\\?\\)")
config_test(bad_float 2
  INI "lr = abc"
  ARGS @INI@
  STDERR "bad_float\\.ini:1: lr = abc: not a number")
config_test(duplicate_key 2
  INI "lr = 0.1" "n_layer = 2" "# lr again:" "lr = 0.2"
  ARGS @INI@
  STDERR "duplicate_key\\.ini:4: lr = 0\\.2: duplicate key, already set on line 1")
config_test(malformed_line 2
  INI "[model]" "n_layer 2"
  ARGS @INI@
  STDERR "malformed_line\\.ini:2: expected 'key = value' or '\\[section\\]', got 'n_layer 2'")
config_test(unterminated_quote 2
  INI "run_name = \"abc"
  ARGS @INI@
  STDERR "unterminated_quote\\.ini:1: unterminated quoted value")
config_test(missing_file 2
  ARGS ${config_cases}/no_such_file.ini
  STDERR "cannot read config file '.*no_such_file\\.ini': No such file or directory")
config_test(config_is_directory 2
  ARGS ${config_cases}
  STDERR "cannot read config file '.*config_cases': Is a directory")

# ---- override errors: one per value class
config_test(unknown_key_override 2
  ARGS ${config_tiny} warmup=5
  STDERR "command line: warmup = 5: unknown key \\(did you mean 'warmup_steps'\\?\\)")
config_test(derived_key 2
  ARGS ${config_tiny} grad_accum=4
  STDERR "grad_accum = 4: grad_accum is derived .* and cannot be set")
config_test(bad_int 2
  ARGS ${config_tiny} n_layer=1.5
  STDERR "n_layer = 1\\.5: not an integer")
config_test(bad_int_trailing_junk 2
  ARGS ${config_tiny} micro_batch=8x
  STDERR "micro_batch = 8x: not an integer")
config_test(bad_float_inf 2
  ARGS ${config_tiny} lr=inf
  STDERR "lr = inf: not a finite number")
config_test(bad_bool 2
  ARGS ${config_tiny} dry_run=maybe
  STDERR "dry_run = maybe: not a boolean \\(use true/false, yes/no, 1/0\\)")
config_test(out_of_range 2
  ARGS ${config_tiny} n_layer=0
  STDERR "n_layer = 0: out of range: must be in \\[1, 1024\\]")
config_test(out_of_range_open 2
  ARGS ${config_tiny} beta2=1
  STDERR "beta2 = 1: out of range: must be in .0, 1\\)")
config_test(int_overflow 2
  ARGS ${config_tiny} n_layer=99999999999
  STDERR "n_layer = 99999999999: out of range")
config_test(negative_seed 2
  ARGS ${config_tiny} seed=-1
  STDERR "seed = -1: not an integer")
config_test(bad_enum 2
  ARGS ${config_tiny} device=gpu
  STDERR "device = gpu: must be one of auto, cpu, cuda")
config_test(override_without_equals 2
  ARGS ${config_tiny} lr
  STDERR "override 'lr' is not key=value")
config_test(zero_stage 2
  ARGS ${config_tiny} zero_stage=2
  STDERR "zero_stage = 2: out of range: must be in \\[0, 1\\]")
config_test(bucket_mb 2
  ARGS ${config_tiny} bucket_mb=0
  STDERR "bucket_mb = 0: out of range: must be in \\(0, ")

# ---- consistency (config_validate)
config_test(embd_not_divisible_by_heads 2
  ARGS ${config_tiny} n_embd=65 n_head=4
  STDERR "n_embd = 65 is not divisible by n_head = 4")
# The CUDA attention runs head sizes 64 and 128 (the CPU reference any): a
# dry run plans for GPUs on any build, so the check runs everywhere.
config_test(cuda_head_size 2
  ARGS ${config_tiny} n_embd=66 n_head=2 device=cuda dry_run=true
  STDERR "device=cuda: head size n_embd / n_head = 66 / 2 = 33, but the CUDA attention supports head sizes 64 and 128")
config_test(cuda_head_size_too_large 2
  ARGS ${config_tiny} n_embd=512 n_head=1 device=cuda dry_run=true
  STDERR "head size n_embd / n_head = 512 / 1 = 512, but the CUDA attention supports head sizes 64 and 128")
config_test(cpu_any_head_size 0
  ARGS --print-config ${config_tiny} n_embd=66 n_head=2 device=cpu
  STDOUT "^n_embd = 66$")
config_test(seq_len_over_block_size 2
  ARGS ${config_tiny} seq_len=256
  STDERR "seq_len = 256 is larger than block_size = 128")
config_test(vocab_over_uint16 2
  ARGS ${config_tiny} vocab_size=70000
  STDERR "vocab_size = 70000: token shards store uint16 ids")
config_test(warmup_over_max_steps 2
  ARGS ${config_tiny} warmup_steps=300
  STDERR "warmup_steps = 300 is larger than max_steps = 200")
config_test(empty_val_data_with_eval 2
  ARGS ${config_tiny} val_data=
  STDERR "val_data is empty but eval_every = 50")
config_test(run_name_path 2
  ARGS ${config_tiny} run_name=../x
  STDERR "run_name = '\\.\\./x': must be a plain directory name")
# 8 * 64 tokens per rank-micro-step: 1000 fits no world; 1536 fits one rank
# (grad_accum 3) but not two (1024 per micro-step over both).
config_test(total_batch_indivisible 2
  ARGS ${config_tiny} total_batch=1000
  STDERR "total_batch = 1000 tokens is not a multiple of micro_batch \\* seq_len \\* world = 8 \\* 64 \\* 1 = 512 tokens \\(world size 1\\)")
config_test(total_batch_np1_ok 0
  ARGS --print-config ${config_tiny} total_batch=1536
  STDOUT "^# grad_accum = 3 ")
config_test(total_batch_indivisible_np2 2 MPI
  ARGS ${config_tiny} total_batch=1536
  STDERR "total_batch = 1536 tokens is not a multiple of .* = 8 \\* 64 \\* 2 = 1024 tokens \\(world size 2\\)"
  ONCE "error:")
config_test(unknown_key_np2 2 MPI
  INI "n_layer = 2" "lr_sched = cosine"
  ARGS @INI@
  STDERR "unknown_key_np2\\.ini:2: lr_sched = cosine: unknown key \\(did you mean 'lr_schedule'\\?\\)"
  ONCE "error:")
config_test(total_batch_np2_ok 0 MPI
  ARGS --print-config ${config_tiny}
  STDOUT "^# grad_accum = 1 " "^# world = 2 ")
config_test(dry_run_ranks_world 0
  ARGS --print-config ${config_tiny} dry_run=true dry_run_ranks=4 micro_batch=4
  STDOUT "^# world = 4 " "^# grad_accum = 1 ")

# device=cuda needs the CUDA backend compiled in (GPT2_HAVE_CUDA, top level).
if(GPT2_HAVE_CUDA)
  config_test(device_cuda 0
    ARGS --print-config ${config_tiny} device=cuda
    STDOUT "^device = cuda$")
else()
  config_test(device_cuda_without_backend 2
    ARGS ${config_tiny} device=cuda
    STDERR "device=cuda but this binary was built without the CUDA backend")
endif()

# ---- good configurations
file(GLOB config_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/configs/*.ini)
foreach(ini ${config_files})
  get_filename_component(stem ${ini} NAME_WE)
  config_test(print_${stem} 0
    ARGS --print-config ${ini}
    STDOUT "^run_name = ${stem}$" "^device = cpu$" "^# grad_accum = [1-9][0-9]* ")
endforeach()
config_test(print_tiny_grad_accum 0
  ARGS --print-config ${config_tiny}
  STDOUT "^# grad_accum = 2 " "^# padded_vocab_size = 50304 " "^n_layer = 2$" "^lr = 0\\.003$")
config_test(print_124M_recipe 0
  ARGS --print-config ${PROJECT_SOURCE_DIR}/configs/124M.ini
  STDOUT "^# grad_accum = 16 " "^total_batch = 524288$" "^max_steps = 19073$" "^lr = 0\\.0006$")
config_test(override 0
  ARGS --print-config ${config_tiny} lr=0.01
  STDOUT "^lr = 0\\.01$")
config_test(override_last_wins 0
  ARGS --print-config ${config_tiny} lr=0.01 n_layer=3 lr=0.02
  STDOUT "^lr = 0\\.02$" "^n_layer = 3$")
config_test(override_run_name 0
  ARGS --print-config ${config_tiny} run_name=exp1
  STDOUT "^run_name = exp1$")
config_test(syntax 0
  ARGS --print-config ${config_syntax}
  STDOUT "^n_layer = 3$" "^n_embd = 96$" "^n_head = 4$" "^block_size = 128$" "^seed = 7$"
         "^lr = 0\\.001$" "^lr_schedule = linear$" "^dry_run = true$" "^# grad_accum = 3 "
         "^train_data = \"runs/a#1.b\\.bin\"$"
         "^val_data = \"  spaced # not a comment . either \"$"
         "^out_dir = \"quote..and..backslash\"$"
         "^run_name = config_syntax$")

add_test(NAME config.roundtrip_tiny
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/integration/config_roundtrip.sh $<TARGET_FILE:gpt2_ddp>
          ${config_tiny} lr=0.00012345678901234567 seed=18446744073709551615 beta1=0.1
          "run_name=a \"q\" x" lr_schedule=constant dry_run=1
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME config.roundtrip_syntax
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/integration/config_roundtrip.sh $<TARGET_FILE:gpt2_ddp>
          ${config_syntax}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME config.help_lists_every_key
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/integration/config_keys.sh $<TARGET_FILE:gpt2_ddp>
          ${PROJECT_SOURCE_DIR}/src/config/config.h ${config_tiny}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(config.roundtrip_tiny config.roundtrip_syntax config.help_lists_every_key
  PROPERTIES LABELS integration TIMEOUT 60)

# The INI reader alone (src/config/ini.h): entries, lines and error texts.
gpt2_unit_test(test_ini 0 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ini.c)
target_link_libraries(test_ini PRIVATE room_config)
