# vfetch: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: build test test-browser demo bench bench-quick bench-micro clean

build:
	scripts/install-deps.sh build
	$(SWIFT) build -c release --product vfetch

test:
	scripts/install-deps.sh test
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Headless Chromium plays through serve from a page of another local origin (Tests/Browser/playback.py).
test-browser:
	scripts/install-deps.sh browser
	$(SWIFT) build --product vfetch
	$(SWIFT) build --product vfetch-origin
	python3 Tests/Browser/playback.py --bin "$$($(SWIFT) build --show-bin-path)"

demo:
	scripts/install-deps.sh demo
	scripts/demo.sh

bench:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product vfetch
	Benchmarks/e2e.sh
	Benchmarks/resume.sh
	Benchmarks/playback.sh
	Benchmarks/slowloris.sh

bench-quick:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product vfetch
	Benchmarks/e2e.sh --quick
	Benchmarks/resume.sh --quick
	Benchmarks/playback.sh --quick
	Benchmarks/slowloris.sh --quick

bench-micro:
	cd Benchmarks/Micro && $(SWIFT) package --disable-sandbox benchmark --no-progress

clean:
	rm -rf .build demo-out
