# The commands a maintainer runs. CI is .ci/run (it does all of this and
# more, on Docker, Podman, TLS and Kubernetes): see TESTING.md.

MODULES     := . mcp k8s adapters/eino adapters/genkit adapters/langchaingo
STATICCHECK := go run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: unit test lint generate ci

# unit: every module's tests that need no container engine (the others
# skip, each with a line saying how to run it). No daemon, about a minute.
unit:
	@for m in $(MODULES); do \
		echo "--- $$m"; \
		(cd $$m && DOCKER_HOST=unix:///nonexistent/docker.sock go test -count=1 ./...) || exit 1; \
	done

# test: the core module's whole suite on the local Docker engine, as the
# README says (the test images are built on first use).
test:
	go test -race -count=1 -timeout 30m ./...

# lint: gofmt, the commits' subjects and bodies (scripts/commit-subjects),
# go vet and staticcheck on every module.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	@scripts/commit-subjects
	@for m in $(MODULES); do \
		echo "--- $$m"; \
		(cd $$m && go vet ./... && $(STATICCHECK) ./...) || exit 1; \
	done

# generate: rebuild the helper binaries embedded in the library
# (reproducible; CI fails when they are stale).
generate:
	go generate ./internal/helperbin

# ci: what CI runs, as root on a Debian machine (installs what it needs).
ci:
	bash .ci/run
