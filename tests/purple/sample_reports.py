"""Hand-written sanitizer reports in the shape clang + libFuzzer print them in OSS-Fuzz/ARVO
(the real gcc-built ones live in data/reports/)."""

PREAMBLE = """\
INFO: Running with entropic power schedule (0xFF, 100).
INFO: Seed: 4264302108
INFO: Loaded 1 modules   (23815 inline 8-bit counters): 23815 [0x55d1a0, 0x55d1a5),
/out/libass_fuzzer: Running 1 inputs 1 time(s) each.
Running: /tmp/poc
"""

ASAN_HEAP_OVERFLOW = (
    PREAMBLE
    + """\
=================================================================
==27==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x7486d9f71878 at pc 0x55d1a0b4 bp 0x7ffd sp 0x7ffc
READ of size 4 at 0x7486d9f71878 thread T0
    #0 0x55d1a0b4 in wrap_lines_measure /src/libass/libass/ass_render.c:1902:50
    #1 0x55d1a0b5 in wrap_lines_smart /src/libass/libass/ass_render.c:1958:5
    #2 0x55d1a0b6 in ass_render_event /src/libass/libass/ass_render.c:2614:5
    #3 0x55d1a0b7 in ass_render_frame /src/libass/libass/ass_render.c:2901:17
    #4 0x55d1a0b8 in LLVMFuzzerTestOneInput /src/libass/fuzz/fuzz.c:163:23
    #5 0x55d1a0b9 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:611:15
    #6 0x55d1a0ba in fuzzer::RunOneTest(fuzzer::Fuzzer*, char const*, unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerDriver.cpp:324:6
    #7 0x55d1a0bb in main /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerMain.cpp:20:10
    #8 0x7f1e2c in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x21b96) (BuildId: 69389d485a9793dbe873f0ea2c93e02efaa9aa3d)
    #9 0x55d1a0bc in _start (/out/libass_fuzzer+0x4f2a9)

0x7486d9f71878 is located 0 bytes after 24-byte region [0x7486d9f71860,0x7486d9f71878)
allocated by thread T0 here:
    #0 0x55e0 in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3
    #1 0x55e1 in ass_shaper_new /src/libass/libass/ass_shaper.c:1012:20
    #2 0x55e2 in ass_renderer_init /src/libass/libass/ass_render.c:87:22
    #3 0x55e3 in LLVMFuzzerTestOneInput /src/libass/fuzz/fuzz.c:150:16

SUMMARY: AddressSanitizer: heap-buffer-overflow /src/libass/libass/ass_render.c:1902:50 in wrap_lines_measure
Shadow bytes around the buggy address:
  0x7486d9f71580: fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa
=>0x7486d9f71800: fa fa fa fa fa fa fa fa fa fa fa fa 00 00 00[fa]
Shadow byte legend (one shadow byte represents 8 application bytes):
  Addressable:           00
==27==ABORTING
"""
)

ASAN_UAF_CPP = """\
==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x6040000000d0 at pc 0x5a3e bp 0x7ffe sp 0x7ffd
WRITE of size 8 at 0x6040000000d0 thread T0
    #0 0x5a3e in Json::Value::operator=(Json::Value&&) /src/jsoncpp/src/lib_json/json_value.cpp:512:10
    #1 0x5a3f in Json::Reader::readValue() /src/jsoncpp/src/lib_json/json_reader.cpp:260:22
    #2 0x5a40 in std::__1::vector<int, std::__1::allocator<int> >::push_back(int&&) /usr/local/bin/../include/c++/v1/vector:1630:5
    #3 0x5a41 in Json::Reader::parse(char const*, char const*, Json::Value&, bool) /src/jsoncpp/src/lib_json/json_reader.cpp:111:23
    #4 0x5a42 in LLVMFuzzerTestOneInput /src/jsoncpp/src/test_lib_json/fuzz.cpp:45:3

0x6040000000d0 is located 0 bytes inside of 40-byte region [0x6040000000d0,0x6040000000f8)
freed by thread T0 here:
    #0 0x5b00 in operator delete(void*) /src/llvm-project/compiler-rt/lib/asan/asan_new_delete.cpp:152:3
    #1 0x5b01 in Json::Reader::~Reader() /src/jsoncpp/src/lib_json/json_reader.cpp:90:1
    #2 0x5b02 in Json::Reader::readArray(Json::Reader::Token&) /src/jsoncpp/src/lib_json/json_reader.cpp:470:7

previously allocated by thread T0 here:
    #0 0x5c00 in operator new(unsigned long) /src/llvm-project/compiler-rt/lib/asan/asan_new_delete.cpp:95:3
    #1 0x5c01 in Json::Reader::pushValue(Json::Value&) /src/jsoncpp/src/lib_json/json_reader.cpp:330:18

SUMMARY: AddressSanitizer: heap-use-after-free /src/jsoncpp/src/lib_json/json_value.cpp:512:10 in Json::Value::operator=(Json::Value&&)
==1==ABORTING
"""

ASAN_DOUBLE_FREE = """\
==9==ERROR: AddressSanitizer: attempting double-free on 0x602000000010 in thread T0:
    #0 0x4a0 in free /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:52:3
    #1 0x4a1 in xmlFreeNode /src/libxml2/tree.c:3890:9
    #2 0x4a2 in xmlParseElement /src/libxml2/parser.c:10120:2

0x602000000010 is located 0 bytes inside of 16-byte region [0x602000000010,0x602000000020)
freed by thread T0 here:
    #0 0x4b0 in free /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:52:3
    #1 0x4b1 in xmlFreeNode /src/libxml2/tree.c:3890:9
    #2 0x4b2 in xmlParseEndTag /src/libxml2/parser.c:9901:5

previously allocated by thread T0 here:
    #0 0x4c0 in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3
    #1 0x4c1 in xmlNewNode /src/libxml2/tree.c:2201:25

SUMMARY: AddressSanitizer: double-free /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:52:3 in free
==9==ABORTING
"""

ASAN_STACK_BUFFER_OVERFLOW = """\
==3==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7ffd1c at pc 0x51 bp 0x7ffd sp 0x7ffc
WRITE of size 1 at 0x7ffd1c thread T0
    #0 0x51 in parse_header /src/proj/src/header.c:77:15
    #1 0x52 in LLVMFuzzerTestOneInput /src/proj/fuzz/fuzz_header.c:12:3

Address 0x7ffd1c is located in stack of thread T0 at offset 48 in frame
    #0 0x50 in parse_header /src/proj/src/header.c:60

  This frame has 2 object(s):
    [32, 48) 'name' (line 62) <== Memory access at offset 48 overflows this variable
    [64, 128) 'value' (line 63)
HINT: this may be a false positive if your program uses some custom stack unwind mechanism, swapcontext or vfork
SUMMARY: AddressSanitizer: stack-buffer-overflow /src/proj/src/header.c:77:15 in parse_header
"""

ASAN_GLOBAL_OVERFLOW = """\
==5==ERROR: AddressSanitizer: global-buffer-overflow on address 0x0055 at pc 0x01 bp 0x02 sp 0x03
READ of size 1 at 0x0055 thread T0
    #0 0x01 in lookup_code /src/proj/lib/codes.c:44:12
    #1 0x02 in decode /src/proj/lib/decode.c:210:9
    #2 0x03 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:9:3

0x0055 is located 0 bytes after global variable 'code_table' defined in '/src/proj/lib/codes.c:12:21' (0x0045) of size 16
SUMMARY: AddressSanitizer: global-buffer-overflow /src/proj/lib/codes.c:44:12 in lookup_code
"""

ASAN_SEGV = """\
AddressSanitizer:DEADLYSIGNAL
=================================================================
==12==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000008 (pc 0x5f bp 0x7f sp 0x7e T0)
==12==The signal is caused by a READ memory access.
==12==Hint: address points to the zero page.
    #0 0x5f in get_name /src/proj/lib/obj.c:31:20
    #1 0x60 in print_obj /src/proj/lib/obj.c:58:5
    #2 0x61 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:20:3

AddressSanitizer can not provide additional info.
SUMMARY: AddressSanitizer: SEGV /src/proj/lib/obj.c:31:20 in get_name
==12==ABORTING
"""

ASAN_STACK_OVERFLOW = (
    """\
==7==ERROR: AddressSanitizer: stack-overflow on address 0x7ffe3 (pc 0x51 bp 0x52 sp 0x53 T0)
"""
    + "".join(
        f"    #{i} 0x{i:x} in parse_expr /src/proj/expr.c:{88 if i % 2 else 140}:{9}\n"
        for i in range(40)
    )
    + """
SUMMARY: AddressSanitizer: stack-overflow /src/proj/expr.c:140:9 in parse_expr
"""
)

MSAN = """\
==1234==WARNING: MemorySanitizer: use-of-uninitialized-value
    #0 0x55f1 in png_read_row /src/libpng/pngread.c:492:11
    #1 0x55f2 in png_read_image /src/libpng/pngread.c:707:10
    #2 0x55f3 in LLVMFuzzerTestOneInput /src/libpng/contrib/oss-fuzz/libpng_read_fuzzer.cc:190:3
    #3 0x55f4 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:611:15

  Uninitialized value was stored to memory at
    #0 0x5601 in png_combine_row /src/libpng/pngrutil.c:3100:7
    #1 0x5602 in png_read_row /src/libpng/pngread.c:480:4

  Uninitialized value was created by a heap allocation
    #0 0x5610 in malloc /src/llvm-project/compiler-rt/lib/msan/msan_interceptors.cpp:1007:3
    #1 0x5611 in png_malloc_base /src/libpng/pngmem.c:91:14
    #2 0x5612 in png_read_start_row /src/libpng/pngrutil.c:4469:30

SUMMARY: MemorySanitizer: use-of-uninitialized-value /src/libpng/pngread.c:492:11 in png_read_row
Exiting
"""

MSAN_STACK_ORIGIN = """\
==8==WARNING: MemorySanitizer: use-of-uninitialized-value
    #0 0x10 in check_sum /src/proj/src/sum.c:20:7
    #1 0x11 in LLVMFuzzerTestOneInput /src/proj/fuzz.c:8:3

  Uninitialized value was created by an allocation of 'total' in the stack frame of function 'compute'
    #0 0x20 in compute /src/proj/src/sum.c:9

SUMMARY: MemorySanitizer: use-of-uninitialized-value /src/proj/src/sum.c:20:7 in check_sum
"""

UBSAN = """\
/src/proj/lib/math.c:57:18: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'
    #0 0x4f in add_len /src/proj/lib/math.c:57:18
    #1 0x50 in read_chunk /src/proj/lib/chunk.c:120:9
    #2 0x51 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:15:3
    #3 0x52 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:611:15

SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior /src/proj/lib/math.c:57:18 in
"""

UBSAN_NO_STACK = """\
/src/proj/lib/shift.c:33:21: runtime error: shift exponent 40 is too large for 32-bit type 'unsigned int'
SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior /src/proj/lib/shift.c:33:21 in
"""

LSAN = """\
=================================================================
==17==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 24 byte(s) in 1 object(s) allocated from:
    #0 0x4d in calloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:77:3
    #1 0x4e in dict_new /src/proj/lib/dict.c:40:16
    #2 0x4f in parse_dict /src/proj/lib/parse.c:300:12
    #3 0x50 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:22:5

Indirect leak of 8 byte(s) in 1 object(s) allocated from:
    #0 0x4d in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3
    #1 0x51 in dict_grow /src/proj/lib/dict.c:77:9

SUMMARY: AddressSanitizer: 32 byte(s) leaked in 2 allocation(s).
"""

NO_FRAMES = """\
==3==ERROR: AddressSanitizer: SEGV on unknown address 0x000000001000 (pc 0x7f00 bp 0x1 sp 0x2 T0)
==3==The signal is caused by a WRITE memory access.
    #0 0x7f00 in __memmove_avx_unaligned_erms (/lib/x86_64-linux-gnu/libc.so.6+0x18b7a0)
    #1 0x55aa  (/out/fuzzer+0x55aa)
    #2 0x55ab in libc.so.6

AddressSanitizer can not provide additional info.
SUMMARY: AddressSanitizer: SEGV (/lib/x86_64-linux-gnu/libc.so.6+0x18b7a0) in __memmove_avx_unaligned_erms
==3==ABORTING
"""

ALLOC_TOO_BIG = """\
==2==ERROR: AddressSanitizer: requested allocation size 0xfffffffffffffffe (0x800 after adjustments for alignment, red zones etc.) exceeds maximum supported size of 0x10000000000 (thread T0)
    #0 0x1 in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3
    #1 0x2 in image_alloc /src/proj/img.c:88:12
    #2 0x3 in LLVMFuzzerTestOneInput /src/proj/fuzz.c:10:3

==2==HINT: if you don't care about these errors you may set allocator_may_return_null=1
SUMMARY: AddressSanitizer: allocation-size-too-big /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3 in malloc
==2==ABORTING
"""

LIBFUZZER_DEADLY = """\
==42== ERROR: libFuzzer: deadly signal
    #0 0x1 in __sanitizer_print_stack_trace /src/llvm-project/compiler-rt/lib/asan/asan_stack.cpp:87:3
    #1 0x2 in fuzzer::PrintStackTrace() /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerUtil.cpp:210:5
    #2 0x3 in abort (/lib/x86_64-linux-gnu/libc.so.6+0x25728)
    #3 0x4 in __assert_fail (/lib/x86_64-linux-gnu/libc.so.6+0x33fd6)
    #4 0x5 in check_state /src/proj/lib/state.c:12:5
    #5 0x6 in LLVMFuzzerTestOneInput /src/proj/fuzz.c:10:3

NOTE: libFuzzer has rudimentary signal handlers.
SUMMARY: libFuzzer: deadly signal
"""
