// Command warren compiles event schemas into Go and operates the broker
// topology they describe. Run `warren help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
