# vfetch: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift
PREFIX ?= /usr/local
# Where `make install` puts things: DESTDIR (for packagers) + PREFIX.
BIN := $(DESTDIR)$(PREFIX)/bin/vfetch
MAN := $(DESTDIR)$(PREFIX)/share/man/man1/vfetch.1
BASH_COMPLETION := $(DESTDIR)$(PREFIX)/share/bash-completion/completions/vfetch
ZSH_COMPLETION := $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_vfetch
FISH_COMPLETION := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/vfetch.fish

.PHONY: build test fuzz test-browser redbot tier demo bench bench-quick bench-micro clean install uninstall format lint docs examples

# What `make install` copies, made here as the user who builds: the release binary, its man page
# (swift-argument-parser's generate-manual, with docs/vfetch-examples.mdoc's EXAMPLES; scripts/man-page.sh
# fails on any warning groff gives) and bash, zsh and fish completions (from the binary itself).
DIST := .build/dist

build:
	scripts/install-deps.sh build
	$(SWIFT) build -c release --product vfetch
	$(SWIFT) package generate-manual >/dev/null
	install -d $(DIST)
	scripts/man-page.sh .build/plugins/GenerateManual/outputs/VFetchCLI/vfetch.1 $(DIST)/vfetch.1
	.build/release/vfetch --generate-completion-script bash >$(DIST)/vfetch.bash
	.build/release/vfetch --generate-completion-script zsh >$(DIST)/_vfetch
	.build/release/vfetch --generate-completion-script fish >$(DIST)/vfetch.fish

# The suites that kill or interrupt a real download at a moment (ResumeTests, CrashResumeTests) run in a
# pass of their own: beside the whole suite on 2 cores their moments came late and they failed by chance.
# So does OriginSwitchTests, whose tests watch 8-16 connections of curl processes arrive at the origin:
# at the start of the whole suite (ffmpeg making fixtures, dozens of vfetch processes) on a busy machine
# they had not connected after 30 s. And SharedHostTests, which counts on the origin seeing a transfer vfetch
# cut within the 0.1 s the host budget waits for it: beside the whole suite (load average 26) the test origin
# saw one late and answered the next request 503 (vfetch took it as the host's limit, as it should).
# ConnectionControlTests' two downloads on a host of four make the same claim (a retry there, once).
SERIAL_SUITES := CrashResumeTests|ResumeTests|OriginSwitchTests|SharedHostTests|ConnectionControlTests
# The fuzz suites (hostile playlists, manifests, media, headers through the parsers and libavformat's probe)
# run in a pass of their own under a cap on address space: an input that makes a parser allocate without
# bound fails the run instead of taking the machine's memory. `make fuzz` is the long run.
FUZZ_SUITES := Fuzz
FUZZ_MEMORY_KIB := 4194304
FUZZ_ITERATIONS ?= 100

# The pure suites (parsers and policy: CPU work, nothing waited for) run in a pass of their own too: beside
# the suites that drive real processes and sockets, their long synchronous tests held both of the cooperative
# threads of a 2-core machine, and those suites' waits ran out.
PURE_SUITES := VFetchCoreTests|VFetchContainersTests|VFetchCacheTests|VFetchStreamsTests

test:
	scripts/install-deps.sh test
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip "$(SERIAL_SUITES)|$(FUZZ_SUITES)|$(PURE_SUITES)"
	$(SWIFT) test --skip-build --filter "$(PURE_SUITES)" --skip "$(FUZZ_SUITES)"
	$(SWIFT) test --skip-build --filter "$(SERIAL_SUITES)"
	ulimit -v $(FUZZ_MEMORY_KIB) && $(SWIFT) test --skip-build --filter "$(FUZZ_SUITES)"

fuzz:
	scripts/install-deps.sh test
	$(SWIFT) build --build-tests
	ulimit -v $(FUZZ_MEMORY_KIB) && FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) $(SWIFT) test --skip-build --filter "$(FUZZ_SUITES)"

# The public libraries' DocC catalogs (Sources/VFetch/VFetch.docc, Sources/VFetchServe/VFetchServe.docc) and every
# public symbol's comment, as static sites in .build/docs/; any warning (a broken symbol link) fails it.
DOC_TARGETS := VFetch VFetchServe
docs:
	scripts/install-deps.sh build
	mkdir -p .build/docs
	for target in $(DOC_TARGETS); do \
		$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target $$target \
			--warnings-as-errors --transform-for-static-hosting --output-path .build/docs/$$target || exit 1; \
	done

# The apps in Examples/ (separate packages that use only the public API) built and run against the test origin,
# every frame they get checked against the source's.
examples:
	scripts/install-deps.sh test
	scripts/examples.sh

# The toolchain's swift-format with the checked-in .swift-format: `format` rewrites, `lint` (in CI) only checks.
format:
	$(SWIFT) format format -i -r Sources Tests Examples Package.swift

lint:
	$(SWIFT) format lint --strict -r Sources Tests Examples Package.swift

# Headless Chromium plays through serve from a page of another local origin: a video file
# (Tests/Browser/playback.py), then HLS with hls.js and DASH, online and offline (Tests/Browser/streams.py);
# and drives the queue's page at /queue: add, pause, resume, cancel, none of it without the token
# (Tests/Browser/queuepage.py).
test-browser:
	scripts/install-deps.sh browser
	$(SWIFT) build --product vfetch
	$(SWIFT) build --product vfetch-origin
	python3 Tests/Browser/playback.py --bin "$$($(SWIFT) build --show-bin-path)"
	python3 Tests/Browser/streams.py --bin "$$($(SWIFT) build --show-bin-path)" --players .build/browser-players
	python3 Tests/Browser/queuepage.py --bin "$$($(SWIFT) build --show-bin-path)"

# REDbot (lint for HTTP) on serve and on nginx in its default configuration: serve must draw no note
# nginx does not, but for the allowed ones the script names (scripts/redbot-check.sh).
redbot:
	scripts/install-deps.sh redbot
	$(SWIFT) build --product vfetch
	VFETCH="$$($(SWIFT) build --show-bin-path)/vfetch" scripts/redbot-check.sh

# Debian's nginx runs docs/sharing-nginx.conf (docs/SHARING.md) in front of serve and the test origin:
# ffmpeg plays a file and an HLS master through it twice, the second play from nginx's cache.
tier:
	scripts/install-deps.sh tier
	$(SWIFT) build --product vfetch
	$(SWIFT) build --product vfetch-origin
	python3 Tests/Tier/tier.py --bin "$$($(SWIFT) build --show-bin-path)"

demo:
	scripts/install-deps.sh demo
	scripts/demo.sh

bench:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product vfetch
	Benchmarks/e2e.sh
	Benchmarks/resume.sh
	Benchmarks/playback.sh
	Benchmarks/stream-start.sh
	Benchmarks/slowloris.sh
	Benchmarks/streams.sh
	Benchmarks/streams-serve.sh

bench-quick:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product vfetch
	Benchmarks/e2e.sh --quick
	Benchmarks/resume.sh --quick
	Benchmarks/playback.sh --quick
	Benchmarks/stream-start.sh --quick
	Benchmarks/slowloris.sh --quick
	Benchmarks/streams.sh --quick
	Benchmarks/streams-serve.sh --quick

bench-micro:
	cd Benchmarks/Micro && $(SWIFT) package --disable-sandbox benchmark --no-progress

# Copies what `make build` made, and builds nothing: `sudo make install` must not compile as root inside
# the user's checkout. Modes are set explicitly, whatever the umask.
install:
	@test -x .build/release/vfetch -a -f $(DIST)/vfetch.fish || { echo "make install: nothing built yet: run 'make' first (as yourself), then 'make install'" >&2; exit 1; }
	install -D -m 0755 .build/release/vfetch $(BIN)
	install -D -m 0644 $(DIST)/vfetch.1 $(MAN)
	install -D -m 0644 $(DIST)/vfetch.bash $(BASH_COMPLETION)
	install -D -m 0644 $(DIST)/_vfetch $(ZSH_COMPLETION)
	install -D -m 0644 $(DIST)/vfetch.fish $(FISH_COMPLETION)
	@echo "installed $(BIN), its man page and completions"

uninstall:
	rm -f $(BIN) $(MAN) $(BASH_COMPLETION) $(ZSH_COMPLETION) $(FISH_COMPLETION)

clean:
	rm -rf .build demo-out
