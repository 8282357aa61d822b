package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ctalk/ctalk/internal/bridge"
)

// stdio runs "ctalk stdio" (see internal/bridge): it connects to the hosted
// server, then serves its tools on in and out until in is closed or ctx
// ends. Help goes to out; logs go to stderr, never to out, which carries
// only MCP messages.
func stdio(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out, stderr io.Writer) error {
	if isLocal(args) {
		return stdioLocal(ctx, args, getenv, in, out, stderr)
	}
	cfg, err := bridge.ParseArgs(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(out, bridge.Help)
		return nil
	}
	if err != nil {
		return err
	}
	cfg.Version = buildInfo().Version
	return bridge.Run(ctx, cfg, in, out, stderr)
}
