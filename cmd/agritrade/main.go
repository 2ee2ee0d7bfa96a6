// Command agritrade is the AgriTrade API server and its operator tools: serve,
// migrate, token, import, version.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "agritrade:", err)
		os.Exit(1)
	}
}
