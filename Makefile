# Thin wrapper over CMake: `make` builds everything into build/, `make test`
# runs every test (unit tests also under ASan+UBSan in build-asan/).
JOBS ?= $(shell nproc)
CMAKE ?= cmake

.PHONY: all build asan test test-unit test-e2e bench-core bench-live clean deps

all: build

build:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build build -j$(JOBS)

asan:
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_CORE_ONLY=OFF >/dev/null
	@$(CMAKE) --build build-asan -j$(JOBS)

test: build asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS) -L unit
	cd build && ctest --output-on-failure -j$(JOBS)

test-unit: build
	cd build && ctest --output-on-failure -j$(JOBS) -L unit

test-e2e: build
	cd build && ctest --output-on-failure -L e2e

bench-core: build
	./build/bench/bench_core

clean:
	rm -rf build build-asan

# Installs the Debian packages Sluice needs (run as root).
deps:
	apt-get update
	apt-get install -y --no-install-recommends build-essential cmake pkg-config \
	  libevent-dev libssl-dev libjansson-dev libyaml-dev libsqlite3-dev libnghttp2-dev zlib1g-dev \
	  libcmocka-dev python3-pytest python3-yaml valgrind openssl \
	  glpk-utils python3-torch openmpi-bin podman runc busybox-static \
	  chromium chromium-driver python3-selenium
	# etcd-server: the replicated store of sluiced --ha (tests/e2e/test_ha.py, docs/ha.md).
	apt-get install -y --no-install-recommends etcd-server etcd-client
	# podman, runc, busybox-static: image tasks in real containers (agent
	# --runtime; tests/e2e/test_containers.py builds its images from
	# busybox, never pulls; docs/containers.md).
	# openmpi-bin: mpirun launching its daemons through Sluice's srun
	# (tests/e2e/test_steps_mpi.py).
	# glpk-utils: the exact LP solver of tools/fill_bound.py (test_sim_fgd.py);
	# python3-torch: torchrun for tests/e2e/test_elastic_torch.py.
	# chromium, chromium-driver, python3-selenium: the web console in a
	# real browser, headless (tests/e2e/test_console.py, docs/console.md).
	# prometheus: promtool (rule tests, config and metrics checks) and a real
	# Prometheus for tests/e2e/test_deploy*.py.
	apt-get install -y --no-install-recommends prometheus
	# iproute2, iptables: daemons in network namespaces, partitions cut inside them (tests/e2e/test_ha_netns.py, bench/ha_matrix.py).
	apt-get install -y --no-install-recommends iproute2 iptables

bench-live: build
	bench/live/run.sh
