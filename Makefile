# Minnow: `make` builds Release into build/ (build/bin/minnow, build/lib/minnow/plugins/),
# `make test` builds and runs every test, `make demo` runs the main job on a bundled model.
BUILD ?= build
CMAKE_FLAGS ?=
export CCACHE_DIR ?= $(HOME)/.cache/ccache

.PHONY: all deps configure build test demo install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure --timeout 900

demo: build
	@scripts/demo.sh $(BUILD)

# make install PREFIX=/opt/minnow
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
