# AgriTrade API: one binary from five Go modules (go.work). `make run` and
# `make test` are the two commands that must always work on a fresh clone.

GO        ?= go
MODULES   := platform system logistics livestock cmd
DOMAINS   := system logistics livestock
PKGS      := $(foreach m,$(MODULES),github.com/agritrade/api/$(m)/...)
BUILD     := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/agritrade/api/cmd/internal/buildinfo.Version=$(BUILD)
TEST_FLAGS ?= -count=1 -timeout 20m

# One build configuration for everything a developer types (make run, make
# token, make demo, make test, a plain `go run ./cmd/agritrade ...`): the Go
# defaults, so each reuses the packages the previous one compiled and only
# links again. SQLite is modernc's pure Go, so no C toolchain is needed either
# way. Only `make build` differs (static, -trimpath): it makes the release
# binary, not part of the edit-run loop.

# The per-module pattern targets (test-%, bench-%, version-%) must not be
# .PHONY: make skips pattern rules for phony targets and would do nothing.
.PHONY: run demo test client-test build lint golangci tidy-check fmt vet bench fuzz release-check token tidy clean help

help: ## list the targets
	@grep -E '^[a-zA-Z%_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

run: ## serve on the embedded default (SQLite and files in ./data)
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/agritrade serve

demo: ## fill ./data with a realistic sample through the API (prints a token per sample user)
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/agritrade demo

test: ## run every test of every module
	$(GO) test $(TEST_FLAGS) $(PKGS)

test-%: ## run one module's tests: make test-system
	$(GO) test $(TEST_FLAGS) github.com/agritrade/api/$*/...

client-test: ## TypeScript client (clients/typescript): npm ci, schema.d.ts current, tsc, Spectral, main flows on a real server
	bash clients/typescript/scripts/ci.sh

FUZZTIME ?= 60s

# Every Fuzz* target of every module, found with `go test -list` in each
# package that has one, fuzzed for FUZZTIME one after another (go test -fuzz
# takes one target of one package at a time). A failure does not stop the
# run: the table at the end lists every target; the exit status is 1 if any
# failed (its input is then in the package's testdata/fuzz/<target>/).
fuzz: ## fuzz every Fuzz* target for FUZZTIME each (default 60s): make fuzz FUZZTIME=10s
	@failed=0; table=""; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' $(MODULES) | xargs -n1 dirname | sort -u); do \
		for f in $$($(GO) test -list '^Fuzz' ./$$dir | grep '^Fuzz'); do \
			echo "== $$dir $$f ($(FUZZTIME))"; start=$$(date +%s); \
			if $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./$$dir; then res=ok; else res=FAIL; failed=1; fi; \
			table="$$table$$(printf '%-45s %-28s %-4s %ss' "$$dir" "$$f" "$$res" "$$(( $$(date +%s) - start ))")\n"; \
		done; \
	done; \
	printf '\n%-45s %-28s %-4s %s\n' package target result took; printf "$$table"; exit $$failed

build: ## build the static release binary into bin/agritrade
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/agritrade ./cmd/agritrade

token: ## print an admin token for the local server
	@$(GO) run ./cmd/agritrade token --sub U1 --name "Ann Smith" --org O1 --org-name "Smith Farms" --orgs O1 --roles admin --ttl 12h

fmt: ## format every Go file
	gofmt -w $(MODULES)

vet: ## go vet every module
	$(GO) vet $(PKGS)

lint: vet golangci ## gofmt check, go vet, and golangci-lint (with gosec) when installed
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

GOLANGCI ?= $(shell command -v golangci-lint 2>/dev/null || echo $$(go env GOPATH)/bin/golangci-lint)

golangci: ## golangci-lint (gosec, errorlint, bodyclose, revive...) over every module
	@if [ -x "$(GOLANGCI)" ]; then \
		for m in $(MODULES); do echo "golangci-lint $$m"; (cd $$m && $(GOLANGCI) run ./...) || exit 1; done; \
	else echo "golangci-lint not installed: go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0"; exit 1; fi

bench: ## run the Go benchmarks, then the scripts under bench/
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	@for s in bench/*.sh; do [ -f "$$s" ] && bash "$$s"; done; true

bench-%: ## one module's benchmarks: make bench-logistics
	$(GO) test -run '^$$' -bench . -benchmem github.com/agritrade/api/$*/...

version-%: ## print a domain module's version from its version.go
	@sed -n 's/^const Version = "\(.*\)"/\1/p' $*/version.go

release-check: ## MODULE=system VERSION=v1.0.0: the tag system/v1.0.0 must match system/version.go
	@test -n "$(MODULE)" -a -n "$(VERSION)" || { echo "usage: make release-check MODULE=system VERSION=v1.0.0"; exit 2; }
	@test -f "$(MODULE)/version.go" || { echo "no module $(MODULE)"; exit 1; }
	@have=v$$(sed -n 's/^const Version = "\(.*\)"/\1/p' $(MODULE)/version.go); \
	if [ "$$have" != "$(VERSION)" ]; then echo "tag $(MODULE)/$(VERSION) does not match $(MODULE)/version.go ($$have)"; exit 1; fi; \
	grep -q "^## \[$${have#v}\]" $(MODULE)/CHANGELOG.md || { echo "$(MODULE)/CHANGELOG.md has no section for $${have#v}"; exit 1; }; \
	echo "ok: $(MODULE)/$(VERSION) matches version.go and CHANGELOG.md"

tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && GOWORK=off GOFLAGS=-mod=mod $(GO) mod tidy) || exit 1; done

tidy-check: ## fail when a module's go.mod or go.sum is not tidy (CI)
	@$(MAKE) -s tidy
	@git diff --exit-code -- '*/go.mod' '*/go.sum' || { echo "go.mod/go.sum not tidy: run make tidy and commit"; exit 1; }

clean: ## remove build output (not ./data)
	rm -rf bin
